"""Pure assignment logic: consumer partition assignors, the task assignor and their codecs."""

from streamjoin.assignment.consumer.plan import plan
from streamjoin.assignment.tasks import plan_tasks

__all__ = ("plan", "plan_tasks")
