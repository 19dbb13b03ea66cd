# Stand-in for the python:3.11-slim image, for machines that reach no image registry (built by
# docker/standins.py under that name): Debian bookworm's own Python 3.11 with pip and the C
# headers, `python` and `pip` on the PATH and pip free to install system-wide, as in the official
# image. The host's own certificate authorities (ca/, from /usr/local/share/ca-certificates, e.g.
# a TLS-inspecting proxy's) are trusted as on the host, so that pip reaches PyPI from a build.
FROM streamjoin-standin/debian:bookworm

COPY ca/ /usr/local/share/ca-certificates/
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-pip python3-dev python-is-python3 \
    && update-ca-certificates \
    && rm -f /usr/lib/python3.11/EXTERNALLY-MANAGED \
    && rm -rf /var/lib/apt/lists/*

ENV LANG=C.UTF-8
CMD ["python3"]
