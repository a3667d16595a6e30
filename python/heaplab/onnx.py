"""ONNX models as planning instances: the tensors of one inference with sizes and lifetimes.

This module owns reading an ONNX graph into buffers: it fixes the batch size, runs ONNX shape
inference, orders the nodes, and turns each tensor into a buffer whose size comes from its
shape and element type and whose lifetime runs from the node that produces it to the last node
that reads it. It needs the optional `onnx` package (``pip install onnx`` or
``pip install heaplab[onnx]``), imported only when a function here is called.

Time is the node's position in execution order: node ``k`` runs at tick ``k``, and a tensor
that node ``p`` writes and node ``c`` last reads lives ``[p, c + 1)``, so a node's inputs and
outputs overlap (no in-place reuse is assumed). With ``n`` nodes, ``n`` is the end of the run.
"""

from __future__ import annotations

import heapq
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from heaplab import InputError, Instance

if TYPE_CHECKING:  # pragma: no cover
    import onnx as _onnx

__all__ = ["Tensors", "tensors", "instance", "bundled_models"]

# Bits per element of every fixed-size ONNX element type, by TensorProto.DataType name.
# STRING has no fixed size; a type missing here (a newer onnx) is reported, not guessed.
_BITS: Dict[str, int] = {
    "FLOAT": 32, "UINT8": 8, "INT8": 8, "UINT16": 16, "INT16": 16, "INT32": 32, "INT64": 64,
    "BOOL": 8, "FLOAT16": 16, "DOUBLE": 64, "UINT32": 32, "UINT64": 64, "COMPLEX64": 64,
    "COMPLEX128": 128, "BFLOAT16": 16, "FLOAT8E4M3FN": 8, "FLOAT8E4M3FNUZ": 8,
    "FLOAT8E5M2": 8, "FLOAT8E5M2FNUZ": 8, "UINT4": 4, "INT4": 4, "FLOAT4E2M1": 4,
    "FLOAT8E8M0": 8, "UINT2": 2, "INT2": 2, "FLOAT6E2M3": 6, "FLOAT6E3M2": 6,
}

# Ops whose output differs from run to run although their inputs are constant: never folded.
_NONDETERMINISTIC = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                     "Multinomial", "Bernoulli"}

# Domains whose ops onnx has schemas for: with only these, shape inference runs strict.
_STANDARD_DOMAINS = {"", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training"}

Dim = Union[int, str, None]


def _import_onnx():
    try:
        import onnx
        import onnx.shape_inference  # noqa: F401
    except ImportError as e:  # pragma: no cover - exercised only without onnx
        raise ImportError(
            "heaplab.onnx needs the 'onnx' package: pip install onnx (or pip install heaplab[onnx])"
        ) from e
    return onnx


@dataclass
class Tensors:
    """The tensors of one ONNX inference as buffers, with their names.

    Buffer ``i`` is tensor ``names[i]``; `instance` numbers buffers ``0 … len-1`` in this order
    (``Instance.ids``), so ``names[id]`` finds a tensor from a plan's id.

    Attributes:
        names: tensor names.
        kinds: per tensor ``"activation"``, ``"input"``, ``"output"``, ``"initializer"`` or
            ``"constant"`` (computed from initializers only; see `tensors`' ``fold_constants``).
        shapes: concrete shapes after batch and dim_params were applied.
        dtypes: ONNX element type names (``"FLOAT"``, ``"FLOAT16"`` …).
        sizes: bytes per tensor (uint64), ``ceil(elements * bits / 8)``.
        lower, upper: half-open lifetimes in node ticks (uint64).
        alignment: offset alignment for every buffer.
        steps: number of nodes, the end of the run.
        batch: the batch size applied (None when the model's own was kept).
        skipped: names of tensors left out because they hold no bytes (a zero dimension).
    """

    names: List[str]
    kinds: List[str]
    shapes: List[Tuple[int, ...]]
    dtypes: List[str]
    sizes: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    alignment: int
    steps: int
    batch: Optional[int]
    skipped: List[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.names)

    def __repr__(self) -> str:
        return (f"heaplab.onnx.Tensors({len(self)} tensors, {self.steps} nodes, batch {self.batch}, "
                f"{int(self.sizes.sum()):,} bytes in all)")

    def instance(self) -> Instance:
        """A `heaplab.Instance` of these buffers; ids ``0 … len-1`` index `names`."""
        return Instance(self.sizes, self.lower, self.upper, alignment=self.alignment,
                        ids=np.arange(len(self.names), dtype=np.uint64))

    def to_pandas(self):
        """A DataFrame with columns id, name, kind, dtype, shape, size, lower, upper."""
        import pandas as pd

        return pd.DataFrame({
            "id": np.arange(len(self.names), dtype=np.uint64), "name": self.names,
            "kind": self.kinds, "dtype": self.dtypes, "shape": self.shapes,
            "size": self.sizes, "lower": self.lower, "upper": self.upper,
        })


def bundled_models() -> List[str]:
    """Paths of the real model graphs the `onnx` wheel ships (``backend/test/data/light``).

    These are the ONNX model zoo's ResNet-50, DenseNet-121, Inception v1/v2, VGG-19,
    SqueezeNet, ShuffleNet, AlexNet and ZFNet-512 with every weight replaced by a
    ``ConstantOfShape`` node that fills it at run time: node order, operators and tensor shapes
    are the real models', weights are not stored.
    """
    onnx = _import_onnx()
    d = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    if not os.path.isdir(d):
        return []
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".onnx"))


def instance(
    model: Union[str, "os.PathLike[str]", "_onnx.ModelProto"],
    batch: Optional[int] = 1,
    alignment: int = 64,
    initializers: bool = False,
    io: bool = False,
    dim_params: Optional[Mapping[str, int]] = None,
    *,
    fold_constants: bool = True,
) -> Instance:
    """The activations of an ONNX model as a `heaplab.Instance`; see `tensors` for the rules.

    Use `tensors` for the same buffers with their names, shapes and kinds.
    """
    return tensors(model, batch=batch, alignment=alignment, initializers=initializers, io=io,
                   dim_params=dim_params, fold_constants=fold_constants).instance()


def tensors(
    model: Union[str, "os.PathLike[str]", "_onnx.ModelProto"],
    batch: Optional[int] = 1,
    alignment: int = 64,
    initializers: bool = False,
    io: bool = False,
    dim_params: Optional[Mapping[str, int]] = None,
    *,
    fold_constants: bool = True,
) -> Tensors:
    """Read an ONNX model's tensors as buffers with sizes and lifetimes.

    Args:
        model: a path to a ``.onnx`` file or an ``onnx.ModelProto`` (not modified). Weights
            stored as external data are not read: only their shapes matter.
        batch: the batch size. It becomes the leading dimension of every graph input that is
            not an initializer, whether that dimension is symbolic (``"N"``, ``"batch_size"``:
            the symbol is then set everywhere it appears), unknown, or a number (a model
            exported at batch 1 is re-batched). ``Reshape`` targets that are constants and
            spell out the old batch in their first entry, on data that carries the batch, are
            rewritten to the new one; any other ``Reshape`` whose element counts then disagree
            is an error naming the node. ``None`` keeps the model's dimensions as they are.
        alignment: offset alignment of every buffer in bytes (a power of two).
        initializers: also the weights (initializers, and constants computed from them), alive
            for the whole run ``[0, steps)``.
        io: also the graph inputs (alive from tick 0 to their last reader) and the graph outputs
            (from their producer to the end, ``steps``).
        dim_params: values for symbolic dimensions, by name: those of the inputs before shape
            inference, and any still symbolic afterwards (for example data-dependent sizes
            from ``NonZero``: give an upper bound).
        fold_constants: count tensors computed only from initializers and constants (such as
            the ``ConstantOfShape`` weights of the bundled test models) as weights, as a
            runtime's constant folding does; False plans them as activations.

    Returns:
        `Tensors`: names, kinds, shapes, sizes and lifetimes; ``.instance()`` for planning.

    Raises:
        heaplab.InputError: missing or unreadable file, not an ONNX model, a failed shape
            inference, a tensor whose shape stays unknown or whose type has no fixed size
            (strings, sequences), a graph whose nodes read undefined tensors or form a cycle,
            or a bad argument; the message names the model and the tensor or node.
        ImportError: the `onnx` package is missing.
    """
    onnx = _import_onnx()
    m, where = _load(onnx, model)
    batch = None if batch is None else _positive("batch", batch)
    if isinstance(alignment, bool) or not isinstance(alignment, (int, np.integer)) or alignment < 1 \
            or alignment & (alignment - 1):
        raise InputError(f"{where}: alignment must be a power of two (got {alignment!r})")
    params: Dict[str, int] = {}
    for key, value in (dim_params or {}).items():
        params[str(key)] = _positive(f"dim_params[{key!r}]", value)

    g = m.graph
    init_names = {t.name for t in g.initializer}
    data_inputs = [vi for vi in g.input if vi.name not in init_names]
    old_batch = _set_batch(m, data_inputs, batch, params, where)
    _apply_params(list(g.input) + list(g.output) + list(g.value_info), params)

    order = _topological_order(g, init_names, where)
    if order != sorted(order):  # shape inference reads the nodes in file order
        reordered = [onnx.NodeProto() for _ in order]
        for dst, k in zip(reordered, order):
            dst.CopyFrom(g.node[k])
        del g.node[:]
        g.node.extend(reordered)
        order = list(range(len(order)))
    static = _static_tensors(g, order, init_names, {vi.name for vi in data_inputs})
    constant = static if fold_constants else set()
    if batch is not None and old_batch is not None and old_batch != batch:
        _rebatch_reshapes(onnx, m, order, static, init_names, old_batch, batch)
    inferred = _infer(onnx, m, where)

    types = _value_types(onnx, inferred)
    for t in g.initializer:
        types[t.name] = (t.data_type, tuple(int(d) for d in t.dims))
    _fill_dropout_masks(onnx, m, types)
    _check_reshapes(g, order, types, params, where)

    steps = len(order)
    producer: Dict[str, int] = {}
    last_use: Dict[str, int] = {}
    for tick, k in enumerate(order):
        node = g.node[k]
        for name in node.output:
            if name:
                producer.setdefault(name, tick)
        for name in _reads(node):
            last_use[name] = tick
    outputs = {vi.name for vi in g.output}

    rows: List[Tuple[str, str, int, int]] = []  # name, kind, lower, upper
    seen = set()

    def add(name: str, kind: str, lo: int, up: int) -> None:
        if name not in seen:
            seen.add(name)
            rows.append((name, kind, lo, max(up, lo + 1)))

    if io:
        for vi in data_inputs:
            up = steps if vi.name in outputs else last_use.get(vi.name, 0) + 1
            add(vi.name, "input", 0, up)
    if initializers:
        for t in g.initializer:
            if t.name in last_use or t.name in outputs:
                add(t.name, "initializer", 0, steps)
    for k in order:
        for name in g.node[k].output:
            if not name or name in seen:
                continue
            p = producer[name]
            if name in outputs:
                if io:
                    add(name, "output", p, steps)
            elif name in constant:
                if initializers:
                    add(name, "constant", 0, steps)
            else:
                add(name, "activation", p, last_use.get(name, p) + 1)

    names, kinds, shapes, dtypes, sizes, lower, upper, skipped = [], [], [], [], [], [], [], []
    for name, kind, lo, up in rows:
        elem, shape = _concrete(onnx, types, name, params, where)
        nbytes = _nbytes(onnx, elem, shape, name, where)
        if nbytes == 0:
            skipped.append(name)
            continue
        names.append(name)
        kinds.append(kind)
        shapes.append(shape)
        dtypes.append(onnx.TensorProto.DataType.Name(elem))
        sizes.append(nbytes)
        lower.append(lo)
        upper.append(up)
    return Tensors(names=names, kinds=kinds, shapes=shapes, dtypes=dtypes,
                   sizes=np.array(sizes, dtype=np.uint64), lower=np.array(lower, dtype=np.uint64),
                   upper=np.array(upper, dtype=np.uint64), alignment=int(alignment), steps=steps,
                   batch=batch, skipped=skipped)


def _positive(what: str, v: object) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise InputError(f"{what} must be a positive integer (got {v!r})")
    return int(v)


def _load(onnx, model) -> Tuple["_onnx.ModelProto", str]:
    """A private copy of the model and the name errors use for it."""
    if isinstance(model, onnx.ModelProto):
        m = onnx.ModelProto()
        m.CopyFrom(model)
        where = f"model {m.graph.name!r}" if m.graph.name else "model"
    elif isinstance(model, (str, os.PathLike)):
        where = os.fspath(model)
        if not os.path.exists(where):
            raise InputError(f"{where}: no such file")
        if os.path.isdir(where):
            raise InputError(f"{where}: is a directory, not an ONNX model")
        try:
            m = onnx.load(where, load_external_data=False)
        except Exception as e:  # protobuf's DecodeError and friends
            raise InputError(f"{where}: not an ONNX model ({type(e).__name__}: {e})") from None
    else:
        raise InputError(f"model must be a path or an onnx.ModelProto (got {type(model).__name__})")
    # Protobuf parses many byte strings as an empty message: a model has an IR version and a graph.
    if m.ir_version == 0 or not m.HasField("graph"):
        raise InputError(f"{where}: not an ONNX model (no IR version or no graph)")
    return m, where


def _dims(vi) -> List:
    t = vi.type
    if not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
        return []
    return list(t.tensor_type.shape.dim)


def _set_batch(m, data_inputs, batch: Optional[int], params: Dict[str, int], where: str) -> Optional[int]:
    """Make ``batch`` the leading dimension of the data inputs; returns the fixed one it replaced.

    A symbolic leading dimension joins ``params`` (so it is set wherever it appears); a
    numeric one is overwritten, and then the graph outputs' leading dimensions and all stored
    intermediate shapes (``value_info``) are dropped, as they were worked out for the old batch.
    """
    if batch is None:
        return None
    old: Optional[int] = None
    changed = False
    for vi in data_inputs:
        dims = _dims(vi)
        if not dims:
            continue
        d0 = dims[0]
        if d0.HasField("dim_param") and d0.dim_param:
            prev = params.setdefault(d0.dim_param, batch)
            if prev != batch:
                raise InputError(
                    f"{where}: input {vi.name!r}: batch={batch} but dim_params[{d0.dim_param!r}]={prev}"
                )
            continue
        if d0.HasField("dim_value"):
            if old is None:
                old = int(d0.dim_value)
            changed |= int(d0.dim_value) != batch
        else:
            changed = True
        d0.Clear()
        d0.dim_value = batch
    if changed:
        for vi in m.graph.output:
            dims = _dims(vi)
            if dims and dims[0].HasField("dim_value"):
                dims[0].Clear()
        del m.graph.value_info[:]
    return old


def _apply_params(vis, params: Mapping[str, int]) -> None:
    for vi in vis:
        for d in _dims(vi):
            if d.HasField("dim_param") and d.dim_param in params:
                v = params[d.dim_param]
                d.Clear()
                d.dim_value = v


def _subgraph_reads(graph) -> set:
    """Names a subgraph (If/Loop/Scan body) reads from its enclosing scopes."""
    local = {vi.name for vi in graph.input} | {t.name for t in graph.initializer}
    for node in graph.node:
        local.update(o for o in node.output if o)
    reads = set()
    for node in graph.node:
        for name in _reads(node):
            if name not in local:
                reads.add(name)
    return reads


def _reads(node) -> List[str]:
    """The tensors a node reads: its inputs and what its subgraphs use from outside them."""
    names = [i for i in node.input if i]
    for attr in node.attribute:
        subs = list(attr.graphs) + ([attr.g] if attr.HasField("g") else [])
        for sg in subs:
            names.extend(sorted(_subgraph_reads(sg)))
    return names


def _topological_order(g, init_names: set, where: str) -> List[int]:
    """Node indices in execution order: the file's order where it is valid (the ONNX rule),
    else a topological sort that keeps the file's order wherever it can."""
    defined_outside = {vi.name for vi in g.input} | init_names
    producer: Dict[str, int] = {}
    for k, node in enumerate(g.node):
        for o in node.output:
            if o:
                if o in producer:
                    raise InputError(f"{where}: tensor {o!r} is written by two nodes "
                                     f"({_node_label(g, producer[o])} and {_node_label(g, k)})")
                producer[o] = k
    deps: List[set] = []
    for k, node in enumerate(g.node):
        d = set()
        for name in _reads(node):
            if name in producer:
                d.add(producer[name])
            elif name not in defined_outside:
                raise InputError(f"{where}: node {_node_label(g, k)} reads {name!r}, which no node, "
                                 "graph input or initializer defines")
        deps.append(d)
    if all(all(p < k for p in d) for k, d in enumerate(deps)):
        return list(range(len(g.node)))
    users: List[List[int]] = [[] for _ in g.node]
    waiting = [len(d) for d in deps]
    for k, d in enumerate(deps):
        for p in d:
            users[p].append(k)
    ready = [k for k, w in enumerate(waiting) if w == 0]
    heapq.heapify(ready)
    order: List[int] = []
    while ready:
        k = heapq.heappop(ready)
        order.append(k)
        for u in users[k]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    if len(order) < len(g.node):
        stuck = min(k for k, w in enumerate(waiting) if w > 0)
        raise InputError(f"{where}: the graph has a cycle through node {_node_label(g, stuck)}")
    return order


def _node_label(g, k: int) -> str:
    node = g.node[k]
    return f"#{k} {node.name!r} ({node.op_type})" if node.name else f"#{k} ({node.op_type})"


def _static_tensors(g, order: Sequence[int], init_names: set, data_inputs: set) -> set:
    """Node outputs that depend on no graph input (only initializers and constants)."""
    const = set(init_names - data_inputs)
    for k in order:
        node = g.node[k]
        if node.op_type in _NONDETERMINISTIC:
            continue
        if all(name in const for name in _reads(node)):
            const.update(o for o in node.output if o)
    return const - init_names


def _constant_source(g, name: str):
    """The TensorProto holding a constant tensor's value (an initializer's, or a Constant
    node's ``value``), else None."""
    for t in g.initializer:
        if t.name == name:
            return t
    for node in g.node:
        if node.op_type == "Constant" and node.output and node.output[0] == name:
            for a in node.attribute:
                if a.name == "value":
                    return a.t
    return None


def _rebatch_reshapes(onnx, m, order, static: set, init_names: set, old: int, new: int) -> None:
    """Rewrite constant Reshape targets that hard-code the old batch on batched data.

    Worked out on the model at its old batch: a Reshape qualifies when its data input depends
    on a graph input, that data's leading dimension is the old batch, and the constant target's
    first entry is the old batch. A target only that Reshape reads is changed where it is; one
    that others read too is copied to a new initializer ``<name>__batch<new>`` for that node.
    """
    from onnx import numpy_helper

    g = m.graph
    reshapes = [k for k in order if g.node[k].op_type == "Reshape" and len(g.node[k].input) >= 2]
    if not reshapes:
        return
    probe = onnx.ModelProto()
    probe.CopyFrom(m)
    for vi in probe.graph.input:
        dims = _dims(vi)
        if vi.name not in init_names and dims:
            dims[0].Clear()
            dims[0].dim_value = old
    try:
        probe = onnx.shape_inference.infer_shapes(probe, data_prop=True)
    except Exception:
        return  # the real inference below reports the problem
    types = _value_types(onnx, probe)
    readers: Dict[str, int] = {}
    for node in g.node:
        for name in _reads(node):
            readers[name] = readers.get(name, 0) + 1
    for vi in g.output:
        readers[vi.name] = readers.get(vi.name, 0) + 1
    taken = set(init_names) | {o for n in g.node for o in n.output}
    for k in reshapes:
        node = g.node[k]
        data, target = node.input[0], node.input[1]
        if data in static or data in init_names or (target not in static and target not in init_names):
            continue
        shape = types.get(data, (0, None))[1]
        if not shape or shape[0] != old:
            continue
        source = _constant_source(g, target)
        if source is None:
            continue
        value = numpy_helper.to_array(source)
        if value.ndim != 1 or len(value) == 0 or int(value[0]) != old:
            continue
        value = value.astype(np.int64).copy()
        value[0] = new
        if readers.get(target, 0) == 1:
            source.CopyFrom(numpy_helper.from_array(value, source.name))
            continue
        name = f"{target}__batch{new}"
        i = 1
        while name in taken:
            name, i = f"{target}__batch{new}_{i}", i + 1
        taken.add(name)
        g.initializer.append(numpy_helper.from_array(value, name))
        readers[target] -= 1
        node.input[1] = name


def _infer(onnx, m, where: str):
    """ONNX shape inference, strict unless the graph uses ops onnx has no schema for."""
    known = {f.domain for f in m.functions}
    strict = True
    stack = [m.graph]
    while stack:
        graph = stack.pop()
        for node in graph.node:
            if node.domain not in _STANDARD_DOMAINS and node.domain not in known:
                strict = False
            for a in node.attribute:
                stack.extend(a.graphs)
                if a.HasField("g"):
                    stack.append(a.g)
    try:
        return onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=strict, data_prop=True)
    except Exception as e:
        msg = str(e).strip().replace("\n", " ")
        raise InputError(f"{where}: shape inference failed: {msg}") from None


def _value_types(onnx, m) -> Dict[str, Tuple[int, Optional[Tuple[Dim, ...]]]]:
    """name -> (elem type, shape or None) for every typed value of the main graph.

    A value that is not a tensor (a sequence, map, optional) maps to (-1, None)."""
    out: Dict[str, Tuple[int, Optional[Tuple[Dim, ...]]]] = {}
    g = m.graph
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        t = vi.type
        if t.HasField("tensor_type"):
            tt = t.tensor_type
            shape: Optional[Tuple[Dim, ...]] = None
            if tt.HasField("shape"):
                shape = tuple(int(d.dim_value) if d.HasField("dim_value")
                              else (d.dim_param or None) for d in tt.shape.dim)
            prev = out.get(vi.name)
            if prev is None or prev[1] is None or (shape is not None and None not in shape
                                                   and not any(isinstance(x, str) for x in shape)):
                out[vi.name] = (tt.elem_type, shape)
        elif t.WhichOneof("value") is not None:
            out[vi.name] = (-1, None)
    return out


def _fill_dropout_masks(onnx, m, types) -> None:
    """Give Dropout's mask output the shape of its input, which ONNX's inference for opsets
    before 12 leaves out; the element type is bool from opset 7, the input's before."""
    opset = next((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), 0)
    for node in m.graph.node:
        if node.op_type != "Dropout" or node.domain not in ("", "ai.onnx") or len(node.output) < 2:
            continue
        mask = node.output[1]
        if not mask or types.get(mask, (0, None))[1] is not None:
            continue
        elem, shape = types.get(node.input[0], (0, None))
        if shape is not None:
            types[mask] = (onnx.TensorProto.BOOL if opset >= 7 else elem, shape)


def _check_reshapes(g, order, types, params, where: str) -> None:
    """Every Reshape keeps its element count: a hard-coded batch elsewhere is caught here."""
    for k in order:
        node = g.node[k]
        if node.op_type != "Reshape" or len(node.input) < 2 or not node.output:
            continue
        a = types.get(node.input[0], (0, None))[1]
        b = types.get(node.output[0], (0, None))[1]
        if a is None or b is None:
            continue
        a = tuple(params.get(x, x) if isinstance(x, str) else x for x in a)
        b = tuple(params.get(x, x) if isinstance(x, str) else x for x in b)
        if any(not isinstance(x, int) for x in a + b):
            continue
        na, nb = int(np.prod(a, dtype=object)), int(np.prod(b, dtype=object))
        if na != nb:
            raise InputError(
                f"{where}: node {_node_label(g, k)} reshapes {node.input[0]!r} of shape {list(a)} "
                f"({na} elements) to {list(b)} ({nb} elements): its target shape is a constant "
                "that does not follow the batch size; use the model's own batch (batch=None)"
            )


def _concrete(onnx, types, name: str, params: Mapping[str, int], where: str) -> Tuple[int, Tuple[int, ...]]:
    elem, shape = types.get(name, (0, None))
    if elem == -1:
        raise InputError(f"{where}: {name!r} is not a tensor (a sequence, map or optional value); "
                         "only tensors can be planned")
    if shape is None:
        raise InputError(f"{where}: tensor {name!r}: shape unknown after shape inference")
    out = []
    for d in shape:
        if isinstance(d, str):
            if d not in params:
                raise InputError(f"{where}: tensor {name!r} has shape {list(shape)}: give the size of "
                                 f"{d!r} in dim_params={{{d!r}: ...}}")
            d = params[d]
        elif d is None:
            raise InputError(f"{where}: tensor {name!r} has shape {[x if x is not None else '?' for x in shape]}"
                             " with a dimension shape inference could not determine")
        out.append(int(d))
    return elem, tuple(out)


def _nbytes(onnx, elem: int, shape: Tuple[int, ...], name: str, where: str) -> int:
    try:
        tname = onnx.TensorProto.DataType.Name(elem)
    except ValueError:
        tname = str(elem)
    if tname == "UNDEFINED":
        raise InputError(f"{where}: tensor {name!r}: element type unknown after shape inference")
    if tname == "STRING":
        raise InputError(f"{where}: tensor {name!r} holds strings, whose size its shape does not fix")
    bits = _BITS.get(tname)
    if bits is None:
        raise InputError(f"{where}: tensor {name!r}: element type {tname} has no known size")
    n = 1
    for d in shape:
        n *= d
    return (n * bits + 7) // 8
