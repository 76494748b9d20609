"""Regenerates tests/bad_inputs/: truncated, lying and hostile artifacts, each with the
exit code `mltriage inspect` must give (expect.tsv). Standard library only."""
import io, json, os, pickle, struct, zipfile, zlib

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "bad_inputs")
os.makedirs(OUT, exist_ok=True)
expect = []


def put(name, data, code, why):
    p = os.path.join(OUT, name)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(data)
    expect.append((name, code, why))


def st(header, data=b"", raw_len=None):
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    n = len(h) if raw_len is None else raw_len
    return struct.pack("<Q", n) + h + data


f32 = lambda xs: b"".join(struct.pack("<f", x) for x in xs)

# --- safetensors --------------------------------------------------------------------------
put("empty.safetensors", b"", 2, "empty file")
put("short.safetensors", b"\x08\x00\x00\x00", 2, "shorter than the 8-byte header length")
put("header_len_2p62.safetensors", struct.pack("<Q", 1 << 62) + b"{}", 2, "header length 2^62")
put("header_past_end.safetensors", struct.pack("<Q", 1000) + b"{}", 2, "header longer than the file")
put("header_not_json.safetensors", st({}, raw_len=8)[:8] + b"not json", 2, "header is not JSON")
put("header_not_object.safetensors", st([1, 2]), 2, "header is a JSON array")
put("offsets_past_end.safetensors", st({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, f32([1, 2])), 2, "data_offsets past the end")
put("petabyte_shape.safetensors", st({"w": {"dtype": "F32", "shape": [1 << 40, 1 << 40], "data_offsets": [0, 16]}}, f32([1, 2, 3, 4])), 2, "shape multiplies to petabytes")
put("overflow_shape.safetensors", st({"w": {"dtype": "F32", "shape": [1 << 62, 1 << 62, 1 << 62], "data_offsets": [0, 16]}}, f32([1, 2, 3, 4])), 2, "shape product overflows")
put("unknown_dtype.safetensors", st({"w": {"dtype": "Q7", "shape": [4], "data_offsets": [0, 16]}}, f32([1, 2, 3, 4])), 2, "unknown dtype")
put("span_mismatch.safetensors", st({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 16]}}, f32([1, 2, 3, 4])), 2, "shape disagrees with data_offsets")
put("reversed_offsets.safetensors", st({"w": {"dtype": "F32", "shape": [0], "data_offsets": [16, 0]}}, f32([1, 2, 3, 4])), 2, "begin > end")
put("truncated_data.safetensors", st({"w": {"dtype": "F32", "shape": [100], "data_offsets": [0, 400]}}, f32([1.0] * 25)), 2, "data region truncated")
put("all_nan.safetensors", st({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}, f32([float("nan")] * 4)), 0, "valid: NaN everywhere is reported")
put("inf_everywhere.safetensors", st({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}}, f32([float("inf"), float("-inf"), float("inf")])), 0, "valid: Inf reported")
put("zero_size.safetensors", st({"w": {"dtype": "BF16", "shape": [0, 4], "data_offsets": [0, 0]}}), 0, "valid: zero-size tensor")
put("only_metadata.safetensors", st({"__metadata__": {"format": "pt"}}), 0, "valid: no tensors")
put("bad_index/model.safetensors.index.json", b"{ this is not json", 2, "index is not JSON")
put("missing_shard/model.safetensors.index.json", json.dumps({"weight_map": {"w": "model-00001-of-00002.safetensors"}}).encode(), 2, "index names a missing shard")

# --- torch zip / pickle -------------------------------------------------------------------


def torch_zip(pkl, extra=None, prefix="archive", compress=zipfile.ZIP_STORED, with_pkl=True):
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", compress) as z:
        if with_pkl:
            z.writestr(f"{prefix}/data.pkl", pkl)
        z.writestr(f"{prefix}/version", b"3\n")
        for k, v in (extra or {}).items():
            z.writestr(f"{prefix}/data/{k}", v)
    return b.getvalue()


class Hostile:
    def __reduce__(self):
        return (os.system, ("touch /tmp/mltriage_pwned_by_pickle",))


hostile = pickle.dumps({"model": Hostile()}, protocol=2)
put("hostile_pickle.pt", torch_zip(hostile), 0, "valid zip; os.system becomes an opaque object and never runs")
put("hostile_legacy.pt", hostile, 2, "a bare (legacy) pickle is refused; nothing runs")
put("garbage.pt", bytes(range(256)) * 8, 2, "not a zip")
put("zip_without_datapkl.pt", torch_zip(b"", with_pkl=False), 2, "zip without data.pkl")
good = torch_zip(pickle.dumps({"a": 1}, protocol=2))
put("truncated_zip.pt", good[: len(good) // 2], 2, "zip cut in half")
deep = b"\x80\x02" + b"(" * 100000 + b"l" * 100000 + b"."
put("deep_nesting.pt", torch_zip(deep), 2, "100k nested lists in data.pkl")
put("pickle_garbage.pt", torch_zip(b"\x80\x02\xff\xfe\xfd"), 2, "unknown pickle opcodes")
# A tensor whose storage is shorter than its declared extent (hand-written protocol-2 pickle).
pk = (b"\x80\x02}q\x00X\x01\x00\x00\x00wq\x01ctorch._utils\n_rebuild_tensor_v2\nq\x02((X\x07\x00\x00\x00storageq\x03ctorch\nFloatStorage\nq\x04X\x01\x00\x00\x000q\x05X\x03\x00\x00\x00cpuq\x06K\x02tq\x07QK\x00K\x10\x85q\x08K\x01\x85q\x09\x89ccollections\nOrderedDict\nq\x0a)Rq\x0btq\x0cRq\x0ds.")
put("storage_too_short.pt", torch_zip(pk, {"0": f32([1, 2])}), 2, "tensor extent past its storage")
put("optimizer.pt", b"PK\x03\x04" + b"\x00" * 40, 2, "optimizer.pt that is not a checkpoint")

# --- TensorBoard ----------------------------------------------------------------------------


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


mask = lambda c: (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def rec(data, bad=False):
    ln = struct.pack("<Q", len(data))
    c = mask(crc32c(data)) ^ (1 if bad else 0)
    return ln + struct.pack("<I", mask(crc32c(ln))) + data + struct.pack("<I", c)


def scalar_event(step, tag, v):
    def vi(n):
        out = b""
        while n >= 0x80:
            out += bytes([(n & 0x7F) | 0x80]); n >>= 7
        return out + bytes([n])
    val = b"\x0a" + vi(len(tag)) + tag + b"\x15" + struct.pack("<f", v)
    summ = b"\x0a" + vi(len(val)) + val
    return b"\x09" + struct.pack("<d", 1.7e9) + b"\x10" + vi(step) + b"\x2a" + vi(len(summ)) + summ


ok = b"".join(rec(scalar_event(s, b"train/loss", 1.0 / s)) for s in range(1, 50))
put("events.out.tfevents.1.badcrc", ok[:200] + rec(scalar_event(99, b"train/loss", 1.0), bad=True) + ok[200:], 2, "bad CRC mid-file")
put("events.out.tfevents.2.hugelen", ok + struct.pack("<Q", 1 << 63) + b"\x00" * 4 + ok, 2, "length field 2^63 mid-file")
put("events.out.tfevents.3.livetail", ok + rec(scalar_event(50, b"train/loss", 0.5))[:-7], 0, "valid: half-written last record tolerated")
put("events.out.tfevents.4.garbage", b"\x00garbage\xff" * 100, 2, "not a record stream")

# --- metric text ----------------------------------------------------------------------------
put("nan_literals/trainer_state.json", json.dumps({"global_step": 3, "log_history": [{"step": 1, "loss": 1.0}, {"step": 2, "loss": 2.0}, {"step": 3, "loss": 3.0}]}).replace("2.0", "NaN").replace("3.0", "Infinity").encode(), 0, "valid: NaN / Infinity literals")
put("truncated/trainer_state.json", b'{"global_step": 3, "log_history": [{"step": 1, "lo', 2, "truncated JSON")
put("ragged/metrics.csv", b"step,loss,lr\n1,2.0,0.1\n2,1.9\n3,1.8,0.1,9\n", 2, "ragged CSV rows")
put("one_row/metrics.csv", b"step,loss\n1,2.5\n", 0, "valid: one-row log")
put("mixed/metrics.jsonl", b'{"step": 1, "loss": 2.0}\n[1, 2]\n{"step": 2, "loss": NaN}\nthis is not json\n{"step": 3, "loss": 1.0}\n', 2, "a non-JSON line mid-file")
put("bad_config/config.json", b'{"vocab_size": 512,', 2, "truncated config.json")

# --- field formats: captured stdout, W&B record files, MLflow metrics -------------------------
put("no_steps/train.log", b"Loading data...\nloss 2.0\nepoch 1 done\n", 2, "a log with no step lines")
put("binary/nohup.out", b"\x00\x01\x02\x00" * 64, 2, "binary bytes named like a log")
put("odd/slurm-77.out", b"step 1: loss nan\nstep 2 | loss inf | lr 1e-3\nstep 99999999999999999999: loss 1\n", 0, "valid: NaN/Inf values, an absurd step skipped")
put("garbage/run-x.wandb", b"\x00garbage\xff" * 10, 2, "not a W&B record file")
put("torn/run-y.wandb", b":W&B\xe1\xbe\x00" + b"\x00\x00\x00\x00\xff\x7f\x01" + b"\x08" * 20, 2, "W&B header, then a record cut short: no history")
put("mlflow/0/r1/metrics/loss", b"1 2.0 1\n2 oops 2\n", 2, "MLflow metric line with a non-number")
put("mlflow/0/r1/meta.yaml", b"run_id: r1\n", 2, "MLflow run metadata alone: nothing inspect reads")

with open(os.path.join(OUT, "expect.tsv"), "w") as f:
    f.write("# file\texit code of `mltriage inspect FILE`\twhat it is\n")
    for n, c, w in expect:
        f.write(f"{n}\t{c}\t{w}\n")
print(len(expect), "files")
