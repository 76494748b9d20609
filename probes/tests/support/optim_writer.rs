//! Writes a `torch.save`-style `optimizer.pt` at test time, streamed to disk (a few hundred
//! MB without holding them): AdamW state (`step`, `exp_avg`, `exp_avg_sq`, float32) for
//! parameters of given shapes in one param group, as a stored zip. Shared by the probes'
//! and the binary's tests (`#[path]`).

#![allow(dead_code)]

use std::io::Write;
use std::path::Path;

fn s(out: &mut Vec<u8>, v: &str) {
    out.push(b'X');
    out.extend_from_slice(&(v.len() as u32).to_le_bytes());
    out.extend_from_slice(v.as_bytes());
}

fn f(out: &mut Vec<u8>, v: f64) {
    out.push(b'G');
    out.extend_from_slice(&v.to_be_bytes());
}

fn i(out: &mut Vec<u8>, v: usize) {
    out.push(b'J');
    out.extend_from_slice(&(v as i32).to_le_bytes());
}

fn ints(out: &mut Vec<u8>, v: &[usize]) {
    out.push(b'(');
    for &x in v {
        i(out, x);
    }
    out.push(b't');
}

/// A float32 tensor over storage `key` (a torch `_rebuild_tensor_v2` call).
fn tensor(out: &mut Vec<u8>, key: usize, shape: &[usize]) {
    let numel: usize = shape.iter().product();
    let mut stride = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        stride[d] = stride[d + 1] * shape[d + 1];
    }
    out.extend_from_slice(b"ctorch._utils\n_rebuild_tensor_v2\n(");
    out.push(b'(');
    s(out, "storage");
    out.extend_from_slice(b"ctorch\nFloatStorage\n");
    s(out, &key.to_string());
    s(out, "cpu");
    i(out, numel);
    out.extend_from_slice(b"tQ");
    i(out, 0);
    ints(out, shape);
    ints(out, &stride);
    out.extend_from_slice(b"\x89ccollections\nOrderedDict\n)R");
    out.extend_from_slice(b"tR");
}

/// The `data.pkl` of an AdamW state: params `0..shapes.len()`, storages `2p` (exp_avg) and
/// `2p + 1` (exp_avg_sq).
pub fn adam_pickle(shapes: &[Vec<usize>], step: f64) -> Vec<u8> {
    let mut o = b"\x80\x02}(".to_vec();
    s(&mut o, "state");
    o.extend_from_slice(b"}(");
    for (p, shape) in shapes.iter().enumerate() {
        i(&mut o, p);
        o.extend_from_slice(b"}(");
        s(&mut o, "step");
        f(&mut o, step);
        s(&mut o, "exp_avg");
        tensor(&mut o, 2 * p, shape);
        s(&mut o, "exp_avg_sq");
        tensor(&mut o, 2 * p + 1, shape);
        o.push(b'u');
    }
    o.push(b'u');
    s(&mut o, "param_groups");
    o.extend_from_slice(b"](}(");
    s(&mut o, "lr");
    f(&mut o, 1e-3);
    s(&mut o, "betas");
    f(&mut o, 0.9);
    f(&mut o, 0.999);
    o.push(0x86);
    s(&mut o, "eps");
    f(&mut o, 1e-8);
    s(&mut o, "weight_decay");
    f(&mut o, 0.0);
    s(&mut o, "params");
    o.extend_from_slice(b"](");
    for p in 0..shapes.len() {
        i(&mut o, p);
    }
    o.extend_from_slice(b"eueu.");
    o
}

type Body<'a> = Box<dyn FnMut(&mut dyn Write) + 'a>;

/// A stored zip of `(name, length, writer)` entries, each body streamed to disk (CRCs left 0:
/// the readers under test slice members out of the file and never inflate or check them).
fn write_zip(path: &Path, entries: Vec<(String, u64, Body<'_>)>) {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut at = 0u64;
    let mut central = Vec::new();
    let count = entries.len() as u16;
    for (name, len, mut body) in entries {
        let off = at as u32;
        let (n, l) = (name.len() as u16, len as u32);
        let mut h = b"PK\x03\x04\x14\x00\x00\x00\x00\x00\x00\x00\x00\x00\0\0\0\0".to_vec();
        h.extend_from_slice(&l.to_le_bytes());
        h.extend_from_slice(&l.to_le_bytes());
        h.extend_from_slice(&n.to_le_bytes());
        h.extend_from_slice(&0u16.to_le_bytes());
        h.extend_from_slice(name.as_bytes());
        w.write_all(&h).unwrap();
        body(&mut w);
        at += h.len() as u64 + len;
        central.extend_from_slice(b"PK\x01\x02\x14\x00\x14\x00\x00\x00\x00\x00\x00\x00\x00\x00");
        central.extend_from_slice(&0u32.to_le_bytes());
        central.extend_from_slice(&l.to_le_bytes());
        central.extend_from_slice(&l.to_le_bytes());
        central.extend_from_slice(&n.to_le_bytes());
        central.extend_from_slice(&[0u8; 12]);
        central.extend_from_slice(&off.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
    }
    let cd_len = central.len() as u32;
    w.write_all(&central).unwrap();
    let mut end = b"PK\x05\x06\x00\x00\x00\x00".to_vec();
    end.extend_from_slice(&count.to_le_bytes());
    end.extend_from_slice(&count.to_le_bytes());
    end.extend_from_slice(&cd_len.to_le_bytes());
    end.extend_from_slice(&(at as u32).to_le_bytes());
    end.extend_from_slice(&0u16.to_le_bytes());
    w.write_all(&end).unwrap();
    w.flush().unwrap();
}

/// A torch archive holding only `pkl` as its `data.pkl`.
pub fn write_pkl_pt(path: &Path, pkl: &[u8]) {
    let pkl = pkl.to_vec();
    let n = pkl.len() as u64;
    write_zip(
        path,
        vec![
            (
                "archive/data.pkl".into(),
                n,
                Box::new(move |w| w.write_all(&pkl).unwrap()),
            ),
            (
                "archive/version".into(),
                2,
                Box::new(|w| w.write_all(b"3\n").unwrap()),
            ),
        ],
    );
}

/// Writes an AdamW `optimizer.pt` for params of `shapes`: `data.pkl`, then each moment's
/// storage filled with `m` (exp_avg) or `v` (exp_avg_sq), streamed in 1 MiB writes.
pub fn write_adam_pt(path: &Path, shapes: &[Vec<usize>], step: f64, m: f32, v: f32) {
    write_adam_pt_each(path, shapes, step, &vec![(m, v); shapes.len()]);
}

/// As [`write_adam_pt`], with each param's own `(m, v)` fill.
pub fn write_adam_pt_each(path: &Path, shapes: &[Vec<usize>], step: f64, moments: &[(f32, f32)]) {
    assert_eq!(shapes.len(), moments.len());
    let pkl = adam_pickle(shapes, step);
    let n = pkl.len() as u64;
    let mut entries: Vec<(String, u64, Body<'_>)> = vec![
        (
            "archive/data.pkl".into(),
            n,
            Box::new(move |w| w.write_all(&pkl).unwrap()),
        ),
        (
            "archive/version".into(),
            2,
            Box::new(|w| w.write_all(b"3\n").unwrap()),
        ),
    ];
    for (p, (shape, &(m, v))) in shapes.iter().zip(moments).enumerate() {
        let bytes = shape.iter().product::<usize>() * 4;
        for (k, x) in [(2 * p, m), (2 * p + 1, v)] {
            let body: Body<'_> = Box::new(move |w| {
                let chunk: Vec<u8> = x.to_le_bytes().repeat(1 << 18);
                let mut left = bytes;
                while left > 0 {
                    let n = left.min(chunk.len());
                    w.write_all(&chunk[..n]).unwrap();
                    left -= n;
                }
            });
            entries.push((format!("archive/data/{k}"), bytes as u64, body));
        }
    }
    write_zip(path, entries);
}

/// One state dict of [`write_state_dicts_pt`]: its top-level key and `(tensor name, shape,
/// fill)` for each tensor.
pub type StateDict<'a> = (&'a str, Vec<(&'a str, Vec<usize>, f32)>);

/// Writes a checkpoint holding several state dicts under their own top-level keys (timm's
/// `{"state_dict": …, "state_dict_ema": …}`), each tensor float32 filled with one value.
pub fn write_state_dicts_pt(path: &Path, dicts: &[StateDict<'_>]) {
    let mut o = b"\x80\x02}(".to_vec();
    let mut storages: Vec<(usize, f32)> = Vec::new();
    for (key, tensors) in dicts {
        s(&mut o, key);
        o.extend_from_slice(b"}(");
        for (name, shape, fill) in tensors {
            s(&mut o, name);
            tensor(&mut o, storages.len(), shape);
            storages.push((shape.iter().product(), *fill));
        }
        o.push(b'u');
    }
    o.extend_from_slice(b"u.");
    let n = o.len() as u64;
    let mut entries: Vec<(String, u64, Body<'_>)> = vec![
        (
            "archive/data.pkl".into(),
            n,
            Box::new(move |w| w.write_all(&o).unwrap()),
        ),
        (
            "archive/version".into(),
            2,
            Box::new(|w| w.write_all(b"3\n").unwrap()),
        ),
    ];
    for (k, (numel, x)) in storages.into_iter().enumerate() {
        let body: Body<'_> =
            Box::new(move |w| w.write_all(&x.to_le_bytes().repeat(numel)).unwrap());
        entries.push((format!("archive/data/{k}"), numel as u64 * 4, body));
    }
    write_zip(path, entries);
}
