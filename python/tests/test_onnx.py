"""heaplab.onnx: ONNX graphs as instances.

Hand-built graphs have sizes and lifetimes worked out by hand in the tests; the nine graphs
the onnx wheel ships are read at batch 1 and 32 and planned by heaplab and the greedy
baselines. Every placement is checked by `heaplab.check` and by the numpy oracle of
conftest.py.
"""

from __future__ import annotations

import glob
import os
import sys

import numpy as np
import pytest

import heaplab
from heaplab import baselines

onnx = pytest.importorskip("onnx", reason="skipped: the onnx package is not installed (pip install onnx)")
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402

import heaplab.onnx as hx  # noqa: E402


from test_baselines import checked, max_load  # noqa: E402


def model(nodes, inputs, outputs, initializers=(), opset=17, value_info=()):
    g = h.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers), value_info=list(value_info))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def vi(name, elem, shape):
    return h.make_tensor_value_info(name, elem, shape)


def by_name(t):
    return {n: (int(s), int(lo), int(up)) for n, s, lo, up in zip(t.names, t.sizes, t.lower, t.upper)}


# ---------------------------------------------------------------- hand-built graphs


def chain(batch_dim):
    # 0 Relu X->A, 1 Sigmoid A->B, 2 Add(B, A)->C, 3 Neg C->Y (graph output)
    return model(
        [h.make_node("Relu", ["X"], ["A"]), h.make_node("Sigmoid", ["A"], ["B"]),
         h.make_node("Add", ["B", "A"], ["C"]), h.make_node("Neg", ["C"], ["Y"])],
        [vi("X", T.FLOAT, [batch_dim, 3])], [vi("Y", T.FLOAT, [batch_dim, 3])],
    )


@pytest.mark.parametrize("batch_dim", ["N", "batch_size", 1, None])
def test_chain_lifetimes_and_batch(batch_dim):
    t = hx.tensors(chain(batch_dim), batch=2)
    # 2 x 3 floats = 24 bytes; A is last read by node 2, B by node 2, C by node 3.
    assert by_name(t) == {"A": (24, 0, 3), "B": (24, 1, 3), "C": (24, 2, 4)}
    assert t.kinds == ["activation"] * 3 and t.steps == 4 and t.shapes[0] == (2, 3)
    assert t.dtypes == ["FLOAT"] * 3
    inst = t.instance()
    assert list(inst.ids) == [0, 1, 2] and list(inst.alignment) == [64] * 3
    p = heaplab.plan(inst, time_limit=0.5)
    checked(inst, p.offsets)


def test_stored_intermediate_shapes_follow_the_batch():
    # Exporters store intermediate shapes (value_info) with the batch symbol or number in them.
    for d in ("N", 1):
        m = chain(d)
        m.graph.value_info.extend([vi("A", T.FLOAT, [d, 3]), vi("B", T.FLOAT, [d, 3])])
        assert by_name(hx.tensors(m, batch=6)) == {"A": (72, 0, 3), "B": (72, 1, 3), "C": (72, 2, 4)}


def test_chain_io():
    t = hx.tensors(chain("N"), batch=5, io=True)
    # The input lives from 0 to its last reader, the output from its producer to the end.
    assert by_name(t) == {"X": (60, 0, 1), "A": (60, 0, 3), "B": (60, 1, 3), "C": (60, 2, 4), "Y": (60, 3, 4)}
    assert dict(zip(t.names, t.kinds)) == {"X": "input", "A": "activation", "B": "activation",
                                          "C": "activation", "Y": "output"}


def test_batch_none_keeps_model_dims_and_dim_params_fill_symbols():
    t = hx.tensors(chain(7), batch=None)
    assert t.shapes[0] == (7, 3) and t.batch is None
    with pytest.raises(heaplab.InputError, match=r"'A'.*dim_params=\{'N'"):
        hx.tensors(chain("N"), batch=None)
    assert hx.tensors(chain("N"), batch=None, dim_params={"N": 4}).shapes[0] == (4, 3)
    with pytest.raises(heaplab.InputError, match="batch=2 but dim_params"):
        hx.tensors(chain("N"), batch=2, dim_params={"N": 4})


def test_inner_symbolic_dims_need_dim_params():
    m = model([h.make_node("Relu", ["X"], ["A"]), h.make_node("Neg", ["A"], ["Y"])],
              [vi("X", T.FLOAT16, ["N", "S"])], [vi("Y", T.FLOAT16, ["N", "S"])])
    with pytest.raises(heaplab.InputError, match=r"tensor 'A' has shape \[3, 'S'\].*dim_params=\{'S'"):
        hx.tensors(m, batch=3)
    t = hx.tensors(m, batch=3, dim_params={"S": 10})
    assert by_name(t) == {"A": (3 * 10 * 2, 0, 2)}


def test_data_dependent_dims():
    m = model([h.make_node("NonZero", ["X"], ["Z"]), h.make_node("Neg", ["Z"], ["W"]),
               h.make_node("Neg", ["W"], ["Y"])],
              [vi("X", T.FLOAT, ["N", 4])], [vi("Y", T.INT64, None)])
    with pytest.raises(heaplab.InputError, match=r"tensor 'Z' has shape \[2, 'unk__0'\]"):
        hx.tensors(m)
    t = hx.tensors(m, dim_params={"unk__0": 8})
    assert by_name(t) == {"Z": (2 * 8 * 8, 0, 2), "W": (128, 1, 3)}


def test_element_sizes():
    kinds = {"FLOAT16": 2 * 10, "BFLOAT16": 2 * 10, "BOOL": 10, "INT8": 10, "UINT8": 10,
             "DOUBLE": 80, "INT64": 80, "UINT16": 20, "INT32": 40, "UINT64": 80,
             "INT4": 5, "UINT4": 5, "FLOAT8E4M3FN": 10, "FLOAT8E5M2": 10}
    nodes = [h.make_node("Cast", ["X"], [k], to=getattr(T, k)) for k in kinds]
    nodes += [h.make_node("Cast", [k], [k + "_f"], to=T.FLOAT) for k in kinds]
    outs = [vi(k + "_f", T.FLOAT, None) for k in kinds]
    m = model(nodes, [vi("X", T.FLOAT, [2, 5])], outs, opset=21)
    t = hx.tensors(m, batch=None)
    got = {n: int(s) for n, s in zip(t.names, t.sizes)}
    assert got == kinds
    assert t.dtypes == list(kinds)
    n = len(kinds)
    for i, k in enumerate(kinds):  # written by node i, read by node n + i
        assert by_name(t)[k][1:] == (i, n + i + 1)


def test_every_onnx_type_has_a_size_or_a_clear_error():
    for name, v in T.DataType.items():
        if name in ("UNDEFINED", "STRING"):
            continue
        assert name in hx._BITS, f"element type {name} has no size"


def test_strings_are_refused():
    m = model([h.make_node("Cast", ["X"], ["S"], to=T.STRING), h.make_node("Cast", ["S"], ["Y"], to=T.FLOAT)],
              [vi("X", T.FLOAT, [2])], [vi("Y", T.FLOAT, [2])])
    with pytest.raises(heaplab.InputError, match="tensor 'S' holds strings"):
        hx.tensors(m, batch=None)


def test_sequences_are_refused():
    m = model([h.make_node("SequenceConstruct", ["X", "X"], ["Q"]),
               h.make_node("ConcatFromSequence", ["Q"], ["Y"], axis=0)],
              [vi("X", T.FLOAT, [2])], [vi("Y", T.FLOAT, None)])
    with pytest.raises(heaplab.InputError, match="'Q' is not a tensor"):
        hx.tensors(m, batch=None)


def test_initializers_constants_and_folding():
    w = h.make_tensor("W", T.FLOAT, [3, 4], np.ones(12, dtype=np.float32))
    shp = h.make_tensor("Wshape", T.INT64, [2], [4, 2])
    m = model(
        [h.make_node("ConstantOfShape", ["Wshape"], ["V"], value=h.make_tensor("v", T.FLOAT, [1], [0.5])),
         h.make_node("MatMul", ["X", "W"], ["A"]),   # [N,4]
         h.make_node("MatMul", ["A", "V"], ["B"]),   # [N,2]
         h.make_node("Relu", ["B"], ["Y"])],
        [vi("X", T.FLOAT, ["N", 3])], [vi("Y", T.FLOAT, ["N", 2])], initializers=[w, shp])
    # V depends on initializers only: a weight, unless folding is off.
    assert by_name(hx.tensors(m, batch=2)) == {"A": (32, 1, 3), "B": (16, 2, 4)}
    t = hx.tensors(m, batch=2, initializers=True)
    assert by_name(t) == {"W": (48, 0, 4), "Wshape": (16, 0, 4), "V": (32, 0, 4), "A": (32, 1, 3), "B": (16, 2, 4)}
    assert dict(zip(t.names, t.kinds))["V"] == "constant"
    assert by_name(hx.tensors(m, batch=2, fold_constants=False)) == {"V": (32, 0, 3), "A": (32, 1, 3), "B": (16, 2, 4)}


def test_initializers_listed_as_inputs_are_weights():
    # IR < 4 lists initializers among the graph inputs; they are neither data nor batched.
    w = h.make_tensor("W", T.FLOAT, [3, 3], np.ones(9, dtype=np.float32))
    m = model([h.make_node("MatMul", ["X", "W"], ["A"]), h.make_node("Relu", ["A"], ["Y"])],
              [vi("X", T.FLOAT, [1, 3]), vi("W", T.FLOAT, [3, 3])], [vi("Y", T.FLOAT, [1, 3])], initializers=[w])
    t = hx.tensors(m, batch=4, io=True, initializers=True)
    assert by_name(t) == {"X": (48, 0, 1), "W": (36, 0, 2), "A": (48, 0, 2), "Y": (48, 1, 2)}


def reshape_model(target):
    shape = h.make_tensor("shape", T.INT64, [len(target)], target)
    return model([h.make_node("Relu", ["X"], ["A"]), h.make_node("Reshape", ["A", "shape"], ["B"]),
                  h.make_node("Relu", ["B"], ["Y"])],
                 [vi("X", T.FLOAT, [1, 2, 3])], [vi("Y", T.FLOAT, None)], initializers=[shape])


def test_reshape_with_hard_coded_batch_follows_the_batch():
    t = hx.tensors(reshape_model([1, 6]), batch=4)
    assert dict(zip(t.names, t.shapes)) == {"A": (4, 2, 3), "B": (4, 6)}
    assert by_name(t) == {"A": (96, 0, 2), "B": (96, 1, 3)}
    # -1 and 0 entries need no rewriting.
    assert dict(zip(*[hx.tensors(reshape_model([0, -1]), batch=4).names,
                      hx.tensors(reshape_model([0, -1]), batch=4).shapes]))["B"] == (4, 6)


def test_reshape_target_from_a_constant_node_follows_the_batch():
    m = model([h.make_node("Relu", ["X"], ["A"]),
               h.make_node("Constant", [], ["shape"], value=h.make_tensor("v", T.INT64, [2], [1, 6])),
               h.make_node("Reshape", ["A", "shape"], ["B"]), h.make_node("Relu", ["B"], ["Y"])],
              [vi("X", T.FLOAT, [1, 2, 3])], [vi("Y", T.FLOAT, None)])
    t = hx.tensors(m, batch=3, initializers=True)
    assert dict(zip(t.names, t.shapes)) == {"shape": (2,), "A": (3, 2, 3), "B": (3, 6)}
    assert dict(zip(t.names, t.kinds))["shape"] == "constant"


def test_shared_reshape_target_is_copied_for_the_batched_reshape():
    # The same constant [1, 6] reshapes the data (batched) and a weight (not batched).
    shape = h.make_tensor("shape", T.INT64, [2], [1, 6])
    w = h.make_tensor("W", T.FLOAT, [2, 3], np.ones(6, dtype=np.float32))
    m = model([h.make_node("Relu", ["X"], ["A"]), h.make_node("Reshape", ["A", "shape"], ["B"]),
               h.make_node("Reshape", ["W", "shape"], ["Wr"]), h.make_node("Add", ["B", "Wr"], ["Y"])],
              [vi("X", T.FLOAT, [1, 2, 3])], [vi("Y", T.FLOAT, None)], initializers=[shape, w])
    t = hx.tensors(m, batch=5, initializers=True)
    shapes = dict(zip(t.names, t.shapes))
    assert shapes["B"] == (5, 6) and shapes["Wr"] == (1, 6) and shapes["shape__batch5"] == (2,)


def test_reshape_target_computed_from_the_input_shape():
    # The exporters' dynamic pattern: Reshape(X, Concat(Shape(X)[0:1], [-1])).
    m = model([h.make_node("Relu", ["X"], ["A"]), h.make_node("Shape", ["A"], ["s"], end=1),
               h.make_node("Concat", ["s", "minus1"], ["target"], axis=0),
               h.make_node("Reshape", ["A", "target"], ["B"]), h.make_node("Relu", ["B"], ["Y"])],
              [vi("X", T.FLOAT, ["batch_size", 2, 3])], [vi("Y", T.FLOAT, ["batch_size", 6])],
              initializers=[h.make_tensor("minus1", T.INT64, [1], [-1])], opset=17)
    t = hx.tensors(m, batch=4)
    assert dict(zip(t.names, t.shapes)) == {"A": (4, 2, 3), "s": (1,), "target": (2,), "B": (4, 6)}
    assert by_name(t)["target"] == (16, 2, 4)
    assert repr(t) == "heaplab.onnx.Tensors(4 tensors, 5 nodes, batch 4, 216 bytes in all)"


def test_reshape_that_cannot_follow_the_batch_is_an_error():
    with pytest.raises(heaplab.InputError, match=r"reshapes 'A' of shape \[4, 2, 3\] \(24 elements\) to \[2, 3\]"):
        hx.tensors(reshape_model([2, 3]), batch=4)
    assert hx.tensors(reshape_model([2, 3]), batch=1).shapes[1] == (2, 3)


def test_node_order_is_topological():
    ordered = chain("N")
    shuffled = chain("N")
    nodes = list(shuffled.graph.node)
    del shuffled.graph.node[:]
    shuffled.graph.node.extend([nodes[2], nodes[0], nodes[3], nodes[1]])
    a, b = hx.tensors(ordered, batch=2), hx.tensors(shuffled, batch=2)
    assert by_name(a) == by_name(b)


def test_cycles_and_undefined_tensors_are_errors():
    m = model([h.make_node("Add", ["X", "B"], ["A"]), h.make_node("Relu", ["A"], ["B"]),
               h.make_node("Neg", ["B"], ["Y"])], [vi("X", T.FLOAT, [1])], [vi("Y", T.FLOAT, [1])])
    with pytest.raises(heaplab.InputError, match="cycle through node #0 \\(Add\\)"):
        hx.tensors(m)
    m = model([h.make_node("Add", ["X", "nowhere"], ["Y"], name="add1")], [vi("X", T.FLOAT, [1])], [vi("Y", T.FLOAT, [1])])
    with pytest.raises(heaplab.InputError, match="node #0 'add1' \\(Add\\) reads 'nowhere'"):
        hx.tensors(m)


def test_subgraph_reads_extend_lifetimes():
    then_g = h.make_graph([h.make_node("Neg", ["A"], ["t"])], "then", [], [vi("t", T.FLOAT, [2])])
    else_g = h.make_graph([h.make_node("Abs", ["A"], ["e"])], "else", [], [vi("e", T.FLOAT, [2])])
    m = model([h.make_node("Relu", ["X"], ["A"]), h.make_node("ReduceSum", ["X"], ["s"], keepdims=0),
               h.make_node("Cast", ["s"], ["c"], to=T.BOOL),
               h.make_node("If", ["c"], ["I"], then_branch=then_g, else_branch=else_g),
               h.make_node("Neg", ["I"], ["Y"])],
              [vi("X", T.FLOAT, [2])], [vi("Y", T.FLOAT, [2])])
    got = by_name(hx.tensors(m, batch=None))
    assert got["A"] == (8, 0, 4)  # read inside the If at node 3
    assert got["I"] == (8, 3, 5)


def test_zero_sized_tensors_are_skipped():
    with pytest.raises(heaplab.InputError, match="positive"):
        hx.tensors(chain("N"), batch=None, dim_params={"N": 0})
    m = model([h.make_node("Slice", ["X", "st", "en"], ["A"]), h.make_node("Neg", ["A"], ["Y"])],
              [vi("X", T.FLOAT, [4])], [vi("Y", T.FLOAT, None)],
              initializers=[h.make_tensor("st", T.INT64, [1], [2]), h.make_tensor("en", T.INT64, [1], [2])])
    t = hx.tensors(m, batch=None)
    assert t.names == [] and t.skipped == ["A"]


def test_to_pandas():
    pytest.importorskip("pandas")
    df = hx.tensors(chain("N"), batch=2).to_pandas()
    assert list(df.columns) == ["id", "name", "kind", "dtype", "shape", "size", "lower", "upper"]
    assert list(df["name"]) == ["A", "B", "C"] and list(df["size"]) == [24, 24, 24]
    assert list(df["upper"]) == [3, 3, 4]


def test_model_proto_is_not_modified():
    m = chain(1)
    before = m.SerializeToString()
    hx.tensors(m, batch=8, io=True)
    assert m.SerializeToString() == before


# ---------------------------------------------------------------- bad input


def test_bad_files(tmp_path):
    with pytest.raises(heaplab.InputError, match="nope.onnx: no such file"):
        hx.instance(str(tmp_path / "nope.onnx"))
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"not an onnx model\n")
    with pytest.raises(heaplab.InputError, match="junk.onnx: not an ONNX model"):
        hx.instance(junk)
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    with pytest.raises(heaplab.InputError, match="empty.onnx: not an ONNX model"):
        hx.instance(empty)
    with pytest.raises(heaplab.InputError, match="is a directory"):
        hx.instance(tmp_path)
    with pytest.raises(heaplab.InputError, match="path or an onnx.ModelProto"):
        hx.instance(42)


def test_missing_onnx_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ImportError, match=r"pip install onnx \(or pip install heaplab\[onnx\]\)"):
        hx.tensors("model.onnx")


def test_bad_arguments():
    for kw, msg in [({"batch": 0}, "batch must be a positive integer"), ({"batch": 2.5}, "batch must"),
                    ({"batch": True}, "batch must"), ({"alignment": 48}, "alignment must be a power of two"),
                    ({"alignment": 0}, "alignment must"), ({"dim_params": {"N": -1}}, "dim_params")]:
        with pytest.raises(heaplab.InputError, match=msg):
            hx.instance(chain("N"), **kw)


def test_failed_shape_inference_names_the_model(tmp_path):
    m = model([h.make_node("MatMul", ["X", "X2"], ["A"]), h.make_node("Neg", ["A"], ["Y"])],
              [vi("X", T.FLOAT, [2, 3]), vi("X2", T.FLOAT, [4, 5])], [vi("Y", T.FLOAT, None)])
    path = tmp_path / "bad.onnx"
    onnx.save(m, str(path))
    with pytest.raises(heaplab.InputError, match="bad.onnx: shape inference failed"):
        hx.instance(path, batch=None)


# ---------------------------------------------------------------- the bundled graphs

MODELS = hx.bundled_models()


def test_the_nine_bundled_graphs_are_there():
    names = sorted(os.path.basename(p) for p in MODELS)
    assert names == sorted(f"light_{n}.onnx" for n in [
        "bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
        "shufflenet", "squeezenet", "vgg19", "zfnet512"])


@pytest.mark.parametrize("path", MODELS, ids=[os.path.basename(p)[6:-5] for p in MODELS])
def test_bundled_graph_at_batch_1_and_32(path):
    one = hx.tensors(path, batch=1)
    many = hx.tensors(path, batch=32)
    assert len(one) > 10 and one.names == many.names
    assert set(one.kinds) == {"activation"}
    # Every activation carries the batch: sizes scale exactly, lifetimes do not change.
    assert (many.sizes == 32 * one.sizes).all()
    assert (one.lower == many.lower).all() and (one.upper == many.upper).all()
    assert all(s[0] == 32 for s in many.shapes)
    out = hx.tensors(path, batch=32, io=True)
    final = [s for s, k in zip(out.shapes, out.kinds) if k == "output"]
    assert final and final[0][:2] == (32, 1000)
    for t in (one, many):
        inst = t.instance()
        p = heaplab.plan(inst, time_limit=0.5)
        checked(inst, p.offsets)
        assert max_load(inst.sizes, inst.lower, inst.upper) <= p.lower_bound <= p.makespan
        assert max_load(inst.sizes, inst.lower, inst.upper) <= p.makespan <= int(inst.sizes.sum()) + 64 * len(inst)
        for planner in (baselines.greedy_by_size, baselines.tflite_arena, baselines.ort_mem_pattern):
            g = planner(inst)
            checked(inst, g.offsets)
            assert g.makespan >= max_load(inst.sizes, inst.lower, inst.upper)


def test_bundled_graph_with_weights_and_io():
    path = [p for p in MODELS if "resnet50" in p][0]
    t = hx.tensors(path, batch=1, io=True, initializers=True)
    kinds = dict(zip(t.names, t.kinds))
    assert kinds["gpu_0/data_0"] == "input" and kinds["gpu_0/softmax_1"] == "output"
    weights = sum(int(s) for s, k in zip(t.sizes, t.kinds) if k == "constant")
    assert 90e6 < weights < 110e6  # ResNet-50: 25.6 M float parameters
    inst = t.instance()
    checked(inst, heaplab.plan(inst, time_limit=0.5).offsets)


# ---------------------------------------------------------------- random graphs against an oracle


@pytest.mark.parametrize("seed", range(16))
def test_random_graphs_against_a_direct_count(seed):
    """Random DAGs of unary, binary, Concat and Cast nodes; the oracle reads sizes and
    lifetimes straight off the node list it built."""
    rng = np.random.default_rng(seed)
    batch = int(rng.integers(1, 9))
    elem = {T.FLOAT: 4, T.FLOAT16: 2}
    tensors = {"X": (T.FLOAT, 8)}  # name -> (element type, width); shapes are [N, width]
    nodes, made = [], []
    for k in range(int(rng.integers(2, 60))):
        names = list(tensors)
        a = names[int(rng.integers(len(names)))]
        ea, wa = tensors[a]
        out = f"t{k}"
        choice = int(rng.integers(4))
        same = [n for n in names if tensors[n] == (ea, wa)]
        if choice == 0:
            nodes.append(h.make_node(["Relu", "Neg", "Abs"][k % 3], [a], [out]))
            tensors[out] = (ea, wa)
        elif choice == 1:
            b = same[int(rng.integers(len(same)))]
            nodes.append(h.make_node("Add", [a, b], [out]))
            tensors[out] = (ea, wa)
        elif choice == 2 and wa <= 32:
            b = same[int(rng.integers(len(same)))]
            nodes.append(h.make_node("Concat", [a, b], [out], axis=1))
            tensors[out] = (ea, 2 * wa)
        else:
            to = T.FLOAT16 if ea == T.FLOAT else T.FLOAT
            nodes.append(h.make_node("Cast", [a], [out], to=to))
            tensors[out] = (to, wa)
        made.append(out)
    last = made[-1]
    m = model(nodes, [vi("X", T.FLOAT, ["N", 8])], [vi(last, tensors[last][0], None)])
    want = {}
    for k, out in enumerate(made):
        if out == last:
            continue
        readers = [j for j, n in enumerate(nodes) if out in n.input]
        e, w = tensors[out]
        want[out] = (batch * w * elem[e], k, (max(readers) if readers else k) + 1)
    t = hx.tensors(m, batch=batch)
    assert by_name(t) == want
    inst = t.instance()
    if len(inst):
        checked(inst, heaplab.plan(inst, time_limit=0.2).offsets)
        checked(inst, baselines.greedy_by_size(inst).offsets)


def test_every_model_the_onnx_wheel_ships_reads_or_raises_input_error():
    """The wheel's other test models (single operators, sequences, strings, PyTorch exports):
    each is read, or refused with an InputError; nothing else escapes."""
    root = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    paths = sorted(p for d in ("simple", "pytorch-converted", "pytorch-operator", "real", "node")
                   for p in glob.glob(os.path.join(root, d, "*", "model.onnx")))
    if not paths:
        pytest.skip("skipped: this onnx wheel ships no test models besides the light ones")
    read = 0
    for path in paths:
        for kw in ({"batch": None, "io": True, "initializers": True}, {"batch": 3}):
            try:
                t = hx.tensors(path, **kw)
            except heaplab.InputError as e:
                assert str(e).startswith(path), str(e)
                continue
            read += 1
            if len(t):
                inst = t.instance()
                checked(inst, baselines.greedy_by_size(inst).offsets)
    assert read > len(paths)
