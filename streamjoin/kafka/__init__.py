"""Thin, typed helpers over aiokafka that every layer above needs: admin access and topic layout."""
