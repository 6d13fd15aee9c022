"""oa.save and oa.load: torch.save's nested checkpoints as one safetensors file.

A mapping of str to tensors (a state_dict) is written as a plain safetensors file, one entry per key, as other
safetensors readers expect. Any other object (dicts with keys of any of the types below, lists, tuples, tensors, str,
int, float, bool and None, nested) is written as its tensors, each named by its path of keys joined with '.'
("model.0.weight", "optimizer.state.0.exp_avg"; '#<n>' appended where two paths would give one name), and the
metadata entry "oa.object" holding the structure as JSON: None, bool, int and str as themselves, a float as a number
or, when not finite, {"float": "nan" | "inf" | "-inf"}, a list as an array, a tuple as {"tuple": [...]}, a dict as
{"dict": [[key, value], ...]} (keys encoded as values), a tensor as {"tensor": name}. A tensor that appears more than
once is stored once, and loads as one tensor in every place, as torch.load keeps sharing.
"""
import json
import math
import pathlib
import tempfile

from . import _oa

OBJECT_KEY = "oa.object"
LEAVES = "tensors, dicts, lists, tuples, str, int, float, bool and None"


def save(obj, f, metadata=None):
    """torch.save(obj, f): writes obj (a state_dict, or a nested checkpoint such as {"model": model.state_dict(),
    "optimizer": opt.state_dict(), "epoch": 3}) to f, a path (atomic replace) or a binary file object (io.BytesIO,
    open(..., "wb")), as safetensors (see oa._serialization for the format). metadata: extra str -> str entries of
    the file's __metadata__ (oa.load_metadata reads them).
    Errors: TypeError naming the path inside obj of a value of another type (a NumPy array, a set, ...), or a
    metadata that is not str -> str; oa.InvalidArgumentError for the reserved metadata key "oa.object" or a file
    that cannot be written."""
    if hasattr(f, "write"):
        with tempfile.TemporaryDirectory() as folder:
            path = pathlib.Path(folder) / "checkpoint.safetensors"
            save(obj, path, metadata)
            f.write(path.read_bytes())
        return
    metadata = dict(metadata or {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise TypeError("oa.save: metadata must map str to str")
    if OBJECT_KEY in metadata:
        raise _oa.InvalidArgumentError(f"oa.save: metadata key '{OBJECT_KEY}' is reserved for the saved structure")
    if hasattr(obj, "items") and all(isinstance(k, str) and isinstance(v, _oa.Tensor) for k, v in obj.items()):
        return _oa.save(obj, f, metadata)
    tensors, names = {}, {}  # name -> tensor; id(tensor) -> name

    def encode(value, path):
        if value is None or isinstance(value, (bool, int, str)):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else {"float": repr(value)}
        if isinstance(value, _oa.Tensor):
            if id(value) not in names:
                name = ".".join(path) or "tensor"
                unique, n = name, 1
                while unique in tensors or unique == "__metadata__":
                    unique, n = f"{name}#{n}", n + 1
                names[id(value)] = unique
                tensors[unique] = value
            return {"tensor": names[id(value)]}
        if isinstance(value, list):
            return [encode(v, path + [str(i)]) for i, v in enumerate(value)]
        if isinstance(value, tuple):
            return {"tuple": [encode(v, path + [str(i)]) for i, v in enumerate(value)]}
        if isinstance(value, dict):
            return {"dict": [[encode(k, path + ["key"]), encode(v, path + [str(k)])] for k, v in value.items()]}
        where = "obj" + "".join(f"[{p}]" for p in path)
        raise TypeError(f"oa.save: {where} is a {type(value).__name__}; oa.save stores {LEAVES}")

    structure = encode(obj, [])
    _oa.save(tensors, f, {**metadata, OBJECT_KEY: json.dumps(structure, allow_nan=False)})


def load(f, engine=None, map_location=None, weights_only=None):
    """torch.load(f): what oa.save wrote to f (a path, or a binary file object read from its position), as new
    tensors on engine (the default one without it): the saved object with its nesting, types and shared tensors, or
    for a plain safetensors file (a state_dict, oa's files of before nested checkpoints, other tools' files) a dict
    of name -> tensor in file order. torch's
    map_location and weights_only are accepted and change nothing (the file holds data only, no code). Errors:
    FileNotFoundError for a missing file; oa.InvalidArgumentError for a truncated or malformed one, or a structure
    naming a tensor the file lacks; oa.UnsupportedError for a dtype oa lacks (F64, I64, ...), naming the tensor."""
    if hasattr(f, "read"):
        with tempfile.TemporaryDirectory() as folder:
            path = pathlib.Path(folder) / "checkpoint.safetensors"
            path.write_bytes(f.read())
            return load(path, engine)
    tensors = _oa.load(f, engine)
    structure = _oa.load_metadata(f).get(OBJECT_KEY)
    if structure is None:
        return tensors

    def decode(value):
        if isinstance(value, list):
            return [decode(v) for v in value]
        if not isinstance(value, dict):
            return value
        (kind, inner), = value.items()
        if kind == "float":
            return float(inner)
        if kind == "tuple":
            return tuple(decode(v) for v in inner)
        if kind == "dict":
            return {decode(k): decode(v) for k, v in inner}
        if inner not in tensors:
            raise _oa.InvalidArgumentError(f"oa.load: the structure of {f} names tensor '{inner}', which the file lacks")
        return tensors[inner]

    return decode(json.loads(structure))
