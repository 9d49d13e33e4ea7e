"""Tree models as data: the device-agnostic TreeEnsemble and its inference layouts."""

from ._ensemble import OUTPUT_TRANSFORMS, NodeFlags, TreeEnsemble
from ._export_common import ExportError

__all__ = ["TreeEnsemble", "NodeFlags", "OUTPUT_TRANSFORMS", "ExportError"]
