"""Utilities shared by all estimators: qid grouping, validation, persistence, checks."""

from ._qid import QueryGroups, group_by_qid, group_sizes_to_qid

__all__ = ["QueryGroups", "group_by_qid", "group_sizes_to_qid"]
