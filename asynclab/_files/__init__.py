"""Every file asynclab reads or writes goes through this package.

- :mod:`._read`: the reader (bounded, never blocking, one way of decoding, JSON depth);
- :mod:`._npz`: ``.npz`` archives read member by member, with a format version;
- :mod:`._schema`: the writers' schemas (members' dtypes and shapes, JSON types);
- :mod:`._write`: the writer's output policy (no overwrite without consent, only of its
  own kind, never a special file, atomic);
- :mod:`._registry`: the public functions that read and write, by kind of file.

Nothing else in the package opens a file (a test searches for it).
"""

from ._npz import FORMAT_MEMBER as FORMAT_MEMBER
from ._npz import Archive as Archive
from ._npz import format_member as format_member
from ._paths import NAME_MAX as NAME_MAX
from ._paths import PATH_MAX as PATH_MAX
from ._paths import check_name as check_name
from ._paths import local_path as local_path
from ._paths import size as size
from ._read import MAX_JSON_DEPTH as MAX_JSON_DEPTH
from ._read import MAX_LINE as MAX_LINE
from ._read import gzip_text_size as gzip_text_size
from ._read import input_file as input_file
from ._read import is_gzip as is_gzip
from ._read import json_depth as json_depth
from ._read import loads_json as loads_json
from ._read import open_binary as open_binary
from ._read import open_text as open_text
from ._read import open_text_bytes as open_text_bytes
from ._read import read_bytes as read_bytes
from ._read import read_text as read_text
from ._registry import READERS as READERS
from ._registry import WRITERS as WRITERS
from ._registry import reads as reads
from ._registry import writes as writes
from ._schema import Member as Member
from ._schema import check_json as check_json
from ._schema import check_members as check_members
from ._write import KINDS as KINDS
from ._write import MARKER as MARKER
from ._write import atomic as atomic
from ._write import distinct_outputs as distinct_outputs
from ._write import figure_bytes as figure_bytes
from ._write import output_path as output_path
from ._write import plot_formats as plot_formats
from ._write import recognise as recognise
from ._write import save_figure as save_figure
from ._write import writable_folder as writable_folder
from ._write import write_bytes as write_bytes
from ._write import write_npz as write_npz
from ._write import write_text as write_text

__all__ = [
    "FORMAT_MEMBER", "KINDS", "MARKER", "MAX_JSON_DEPTH", "MAX_LINE", "NAME_MAX", "PATH_MAX",
    "READERS", "WRITERS", "Archive", "Member", "atomic", "check_json", "check_members",
    "check_name", "distinct_outputs", "figure_bytes", "format_member", "gzip_text_size",
    "input_file", "is_gzip", "json_depth", "loads_json", "local_path", "open_binary",
    "open_text", "open_text_bytes", "output_path", "plot_formats", "read_bytes",
    "read_text", "reads", "recognise", "save_figure", "size",
    "writable_folder", "write_bytes", "write_npz", "write_text", "writes",
]
