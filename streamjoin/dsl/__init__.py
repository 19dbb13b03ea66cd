"""What users write: the App, its topics and tables, join windows and serdes."""

from streamjoin.dsl.app import App
from streamjoin.dsl.settings import AppSettings
from streamjoin.dsl.spec import JoinSpec
from streamjoin.dsl.topics import Table, Topic
from streamjoin.dsl.windows import JoinWindows

__all__ = ("App", "AppSettings", "JoinSpec", "JoinWindows", "Table", "Topic")
