//! A pickle interpreter that never executes code: it understands the opcodes `torch.save`
//! writes (protocols 0–5), rebuilds tensors, ordered dicts, sets and `torch.Size` from a short
//! whitelist, and turns every other global (`os.system`, `builtins.eval` …) into an opaque
//! [`Value::Global`] / [`Value::Object`] that is only ever looked at, never called.
//!
//! Containers live in an arena while the VM runs (so memoised containers that are filled later
//! behave as in Python) and are materialised at the end with bounded depth and item counts.
//! All sizes are checked against the remaining input; nothing recurses on untrusted nesting
//! except the materialiser, bounded by [`MAX_DEPTH`], and the whitelisted
//! `_rebuild_from_type*` wrapper, bounded by [`MAX_CALL_DEPTH`].
//!
//! The VM budget (README "Budgets"): opcodes ([`MAX_OPS`]), containers/stack/memo slots
//! ([`MAX_ITEMS`]), bytes the VM itself copies or builds ([`MAX_VM_BYTES`]: global names,
//! `_codecs.encode` results, tensor shapes), name lengths ([`MAX_NAME`]) and the size of the
//! materialised value ([`MAX_OUTPUT_BYTES`], shared references counted each time they
//! appear, so memo amplification cannot expand a small file into gigabytes).

use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;

use super::dtype::DType;

/// Containers, stack slots, call arguments and memo entries allowed in one pickle, together.
pub const MAX_ITEMS: usize = 4_000_000;
/// Deepest nesting of containers in the materialised value.
pub const MAX_DEPTH: usize = 256;
/// Deepest nesting of whitelisted calls that unwrap another call (`_rebuild_from_type_v2`).
pub const MAX_CALL_DEPTH: usize = 8;
/// Opcodes executed.
pub const MAX_OPS: usize = 64_000_000;
/// Bytes the VM copies or builds beyond the input (names, encoded strings, shapes).
pub const MAX_VM_BYTES: usize = 256 << 20;
/// Longest global module/name or storage key accepted.
pub const MAX_NAME: usize = 4096;
/// Size of the materialised value: every node and every byte of text, shared references
/// counted each time they appear.
pub const MAX_OUTPUT_BYTES: usize = 256 << 20;
/// Longest arbitrary-precision integer (bytes) accepted from LONG1/LONG4/text forms.
pub const MAX_BIGINT_BYTES: usize = 4096;

/// A pickle that could not be interpreted. The caller adds the file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PickleError(pub String);

impl fmt::Display for PickleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pickle: {}", self.0)
    }
}

impl std::error::Error for PickleError {}

type PResult<T> = std::result::Result<T, PickleError>;

fn perr<T>(msg: impl Into<String>) -> PResult<T> {
    Err(PickleError(msg.into()))
}

/// A tensor as the pickle describes it: a view (offset, shape, stride in elements) into a
/// storage that lives elsewhere (a `data/<key>` entry of the torch zip).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TensorRef {
    pub storage_key: String,
    pub dtype: DType,
    /// Elements in the storage, as the persistent id declares it.
    pub storage_numel: u64,
    /// Offset into the storage, in elements.
    pub offset: u64,
    pub shape: Vec<usize>,
    pub stride: Vec<usize>,
}

impl TensorRef {
    /// Number of elements, `None` on overflow.
    pub fn numel(&self) -> Option<usize> {
        self.shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d))
    }

    /// Row-major contiguous (dims of extent 1 may have any stride).
    pub fn is_contiguous(&self) -> bool {
        let mut expect = 1usize;
        for (&d, &s) in self.shape.iter().zip(&self.stride).rev() {
            if d != 1 && s != expect {
                return false;
            }
            expect = expect.saturating_mul(d);
        }
        true
    }
}

/// A materialised pickle value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    /// An integer beyond `i64`: little-endian two's complement bytes.
    BigInt(Vec<u8>),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    List(Vec<Value>),
    Tuple(Vec<Value>),
    /// Entries in pickle order (duplicates, if a pickle has them, are kept).
    Dict(Vec<(Value, Value)>),
    Set(Vec<Value>),
    /// A class or function reference that was never resolved or called.
    Global {
        module: String,
        name: String,
    },
    /// The result of calling/instantiating a non-whitelisted global: recorded, never run.
    Object {
        class: (String, String),
        args: Vec<Value>,
        state: Option<Box<Value>>,
    },
    /// A persistent id that is not a torch storage.
    PersistentId(Box<Value>),
    Tensor(TensorRef),
}

impl Value {
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Float(f) => Some(*f),
            Value::Int(i) => Some(*i as f64),
            Value::Bool(b) => Some(*b as u8 as f64),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Bool(b) => Some(*b as i64),
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(*f as i64),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            Value::Int(i) => Some(*i != 0),
            _ => None,
        }
    }

    /// A string, or the string an opaque enum-like object wraps (`SchedulerType('cosine')`).
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            Value::Object { args, .. } if args.len() == 1 => args[0].as_str(),
            Value::Object {
                args,
                state: Some(st),
                ..
            } if args.is_empty() => lookup(st, "_value_").and_then(Value::as_str),
            _ => None,
        }
    }

    /// Items of a list, tuple or set.
    pub fn as_seq(&self) -> Option<&[Value]> {
        match self {
            Value::List(v) | Value::Tuple(v) | Value::Set(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_dict(&self) -> Option<&[(Value, Value)]> {
        match self {
            Value::Dict(d) => Some(d),
            _ => None,
        }
    }

    pub fn as_tensor(&self) -> Option<&TensorRef> {
        match self {
            Value::Tensor(t) => Some(t),
            _ => None,
        }
    }

    /// A key rendered as a path component: strings as is, integers in decimal.
    pub fn key_string(&self) -> Option<String> {
        match self {
            Value::Str(s) => Some(s.clone()),
            Value::Int(i) => Some(i.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }

    /// A compact, Python-like rendering, cut at about `max` characters.
    pub fn repr(&self, max: usize) -> String {
        let mut out = String::new();
        repr_into(self, &mut out, max, 0);
        if out.len() > max {
            let mut cut = max;
            while !out.is_char_boundary(cut) {
                cut -= 1;
            }
            out.truncate(cut);
            out.push('…');
        }
        out
    }
}

fn repr_into(v: &Value, out: &mut String, max: usize, depth: usize) {
    use std::fmt::Write;
    if out.len() > max || depth > 32 {
        return;
    }
    match v {
        Value::None => out.push_str("None"),
        Value::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::BigInt(b) => {
            let _ = write!(out, "<int {} bytes>", b.len());
        }
        Value::Float(f) => {
            let _ = write!(out, "{f}");
        }
        Value::Str(s) => {
            let _ = write!(out, "{s:?}");
        }
        Value::Bytes(b) => {
            let _ = write!(out, "<bytes {}>", b.len());
        }
        Value::List(items) | Value::Tuple(items) | Value::Set(items) => {
            let (o, c) = match v {
                Value::List(_) => ('[', ']'),
                Value::Tuple(_) => ('(', ')'),
                _ => ('{', '}'),
            };
            out.push(o);
            for (i, it) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                repr_into(it, out, max, depth + 1);
                if out.len() > max {
                    return;
                }
            }
            out.push(c);
        }
        Value::Dict(d) => {
            out.push('{');
            for (i, (k, x)) in d.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                repr_into(k, out, max, depth + 1);
                out.push_str(": ");
                repr_into(x, out, max, depth + 1);
                if out.len() > max {
                    return;
                }
            }
            out.push('}');
        }
        Value::Global { module, name } => {
            let _ = write!(out, "{module}.{name}");
        }
        Value::Object { class, args, .. } => {
            if let (1, Some(s)) = (args.len(), v.as_str()) {
                let _ = write!(out, "{s:?}");
            } else {
                let _ = write!(out, "<{}.{}>", class.0, class.1);
            }
        }
        Value::PersistentId(_) => out.push_str("<persistent id>"),
        Value::Tensor(t) => {
            let _ = write!(out, "tensor({}, {:?})", t.dtype, t.shape);
        }
    }
}

/// Looks `key` up in a dict, or in the state dict of an opaque object (what `BUILD` set), or in
/// the first element of a `(state, slotstate)` tuple.
pub fn lookup<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    match v {
        Value::Dict(d) => d
            .iter()
            .find(|(k, _)| matches!(k, Value::Str(s) if s == key))
            .map(|(_, x)| x),
        Value::Object {
            state: Some(st), ..
        } => match st.as_ref() {
            Value::Tuple(t) => t.iter().find_map(|s| lookup(s, key)),
            other => lookup(other, key),
        },
        _ => None,
    }
}

/// Looks up a dotted path (`"state_dict.model"`) through dicts and object states.
pub fn lookup_path<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |cur, k| lookup(cur, k))
}

// ---------------------------------------------------------------------------------------------
// The VM.

#[derive(Debug, Clone)]
struct Storage {
    dtype: DType,
    key: Rc<str>,
    numel: u64,
    /// The original persistent id, for when a storage is not used by a tensor.
    pid: Box<V>,
}

#[derive(Debug, Clone)]
enum V {
    None,
    Bool(bool),
    Int(i64),
    BigInt(Rc<[u8]>),
    Float(f64),
    Str(Rc<str>),
    Bytes(Rc<[u8]>),
    Global(Rc<(String, String)>),
    Storage(Rc<Storage>),
    Tensor(Rc<TensorRef>),
    Node(usize),
}

#[derive(Debug)]
enum Node {
    List(Vec<V>),
    Tuple(Vec<V>),
    Dict(Vec<(V, V)>),
    Set(Vec<V>),
    Object {
        class: (String, String),
        args: Vec<V>,
        state: Option<V>,
    },
    PersId(V),
}

struct Vm<'a> {
    buf: &'a [u8],
    pos: usize,
    stack: Vec<V>,
    marks: Vec<usize>,
    memo: HashMap<u64, V>,
    arena: Vec<Node>,
    items: usize,
    ops: usize,
    bytes: usize,
    call_depth: usize,
}

/// Parses a pickle into a [`Value`]; never calls anything the pickle names.
pub fn parse(data: &[u8]) -> PResult<Value> {
    parse_sized(data).map(|(v, _)| v)
}

/// [`parse`], with the bytes the value was charged against [`MAX_OUTPUT_BYTES`] (its items
/// and text: an estimate of the memory it holds).
pub fn parse_sized(data: &[u8]) -> PResult<(Value, usize)> {
    let mut vm = Vm {
        buf: data,
        pos: 0,
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
        arena: Vec::new(),
        items: 0,
        ops: 0,
        bytes: 0,
        call_depth: 0,
    };
    let root = vm.run()?;
    let mut m = Materializer {
        arena: &vm.arena,
        busy: vec![false; vm.arena.len()],
        items: 0,
        out: 0,
    };
    let v = m.value(&root, 0)?;
    Ok((v, m.out))
}

impl<'a> Vm<'a> {
    fn take(&mut self, n: usize) -> PResult<&'a [u8]> {
        let rest = self.buf.len() - self.pos;
        if n > rest {
            return perr(format!(
                "truncated: needs {n} bytes at offset {}, {rest} left",
                self.pos
            ));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn take_len(&mut self, n: u64) -> PResult<&'a [u8]> {
        let rest = (self.buf.len() - self.pos) as u64;
        if n > rest {
            return perr(format!(
                "length {n} at offset {} runs past the end ({rest} bytes left)",
                self.pos
            ));
        }
        self.take(n as usize)
    }

    fn u8(&mut self) -> PResult<u8> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> PResult<u16> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> PResult<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> PResult<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    fn line(&mut self) -> PResult<&'a [u8]> {
        let rest = &self.buf[self.pos..];
        match rest.iter().position(|&c| c == b'\n') {
            Some(i) => {
                self.pos += i + 1;
                let l = &rest[..i];
                Ok(l.strip_suffix(b"\r").unwrap_or(l))
            }
            None => perr(format!("unterminated text argument at offset {}", self.pos)),
        }
    }

    fn line_str(&mut self) -> PResult<&'a str> {
        std::str::from_utf8(self.line()?)
            .map_err(|_| PickleError("text argument is not UTF-8".into()))
    }

    fn count(&mut self, n: usize) -> PResult<()> {
        self.items = self.items.saturating_add(n);
        if self.items > MAX_ITEMS {
            return perr(format!("more than {MAX_ITEMS} items"));
        }
        Ok(())
    }

    /// Charges `n` bytes the VM builds against [`MAX_VM_BYTES`].
    fn spend(&mut self, n: usize) -> PResult<()> {
        self.bytes = self.bytes.saturating_add(n);
        if self.bytes > MAX_VM_BYTES {
            return perr(format!(
                "builds more than {} MiB (repeated names, encodings or shapes); refused",
                MAX_VM_BYTES >> 20
            ));
        }
        Ok(())
    }

    /// A global named by the pickle, with both parts under [`MAX_NAME`] and charged.
    fn global(&mut self, m: &str, n: &str) -> PResult<V> {
        if m.len() > MAX_NAME || n.len() > MAX_NAME {
            return perr(format!(
                "global name of {} bytes is longer than {MAX_NAME}",
                m.len().max(n.len())
            ));
        }
        self.spend(m.len() + n.len())?;
        Ok(V::Global(Rc::new((m.to_string(), n.to_string()))))
    }

    fn push(&mut self, v: V) -> PResult<()> {
        if self.stack.len() >= MAX_ITEMS {
            return perr("stack too deep");
        }
        self.stack.push(v);
        Ok(())
    }

    fn pop(&mut self) -> PResult<V> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return perr(format!("stack underflow at offset {}", self.pos));
        }
        self.stack
            .pop()
            .ok_or_else(|| PickleError("stack underflow".into()))
    }

    fn top(&mut self) -> PResult<&mut V> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return perr(format!("empty stack at offset {}", self.pos));
        }
        self.stack
            .last_mut()
            .ok_or_else(|| PickleError("empty stack".into()))
    }

    fn pop_mark(&mut self) -> PResult<Vec<V>> {
        let m = self
            .marks
            .pop()
            .ok_or_else(|| PickleError(format!("no MARK at offset {}", self.pos)))?;
        if m > self.stack.len() {
            return perr("corrupt MARK");
        }
        Ok(self.stack.split_off(m))
    }

    fn node(&mut self, n: Node) -> PResult<V> {
        self.count(1)?;
        self.arena.push(n);
        Ok(V::Node(self.arena.len() - 1))
    }

    fn memo_put(&mut self, idx: u64) -> PResult<()> {
        let v = self.top()?.clone();
        if self.memo.insert(idx, v).is_none() {
            self.count(1)?;
        }
        Ok(())
    }

    fn memo_get(&mut self, idx: u64) -> PResult<()> {
        let v = self
            .memo
            .get(&idx)
            .cloned()
            .ok_or_else(|| PickleError(format!("memo key {idx} not found")))?;
        self.push(v)
    }

    fn node_mut(&mut self, v: &V) -> Option<&mut Node> {
        match v {
            V::Node(i) => self.arena.get_mut(*i),
            _ => None,
        }
    }

    fn extend(&mut self, target: &V, items: Vec<V>) -> PResult<()> {
        self.count(items.len())?;
        match self.node_mut(target) {
            Some(Node::List(l)) | Some(Node::Set(l)) => {
                l.extend(items);
                Ok(())
            }
            // Appending to an opaque object (a list subclass): keep the items as args.
            Some(Node::Object { args, .. }) => {
                args.extend(items);
                Ok(())
            }
            _ => perr("APPEND/ADDITEMS target is not a list or set"),
        }
    }

    fn set_items(&mut self, target: &V, items: Vec<V>) -> PResult<()> {
        if items.len() % 2 != 0 {
            return perr("SETITEMS with an odd number of items");
        }
        self.count(items.len())?;
        let mut it = items.into_iter();
        let mut pairs = Vec::new();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            pairs.push((k, v));
        }
        match self.node_mut(target) {
            Some(Node::Dict(d)) => {
                d.extend(pairs);
                Ok(())
            }
            // Setting items on an opaque object (a dict subclass): record them as its state.
            Some(Node::Object { state, .. }) => {
                if state.is_none() {
                    let n = self.node(Node::Dict(pairs))?;
                    if let Some(Node::Object { state, .. }) = self.node_mut(target) {
                        *state = Some(n);
                    }
                    return Ok(());
                }
                Ok(())
            }
            _ => perr("SETITEM target is not a dict"),
        }
    }

    fn tuple_items(&self, v: &V) -> Option<&[V]> {
        match v {
            V::Node(i) => match self.arena.get(*i) {
                Some(Node::Tuple(t)) | Some(Node::List(t)) => Some(t),
                _ => None,
            },
            _ => None,
        }
    }

    fn usizes(&self, v: &V) -> Option<Vec<usize>> {
        self.tuple_items(v)?
            .iter()
            .map(|x| match x {
                V::Int(i) if *i >= 0 => usize::try_from(*i).ok(),
                _ => None,
            })
            .collect()
    }

    /// `_rebuild_tensor*(storage, offset, size, stride, …)`; with `as_dtype`, the storage is
    /// reinterpreted (an untyped byte storage read as that dtype).
    fn rebuild_tensor(&mut self, args: &[V], as_dtype: Option<DType>) -> PResult<Option<V>> {
        let t = self.rebuild_tensor_ref(args, as_dtype);
        if let Some(V::Tensor(t)) = &t {
            self.spend(t.storage_key.len() + 16 * t.shape.len() + 64)?;
        }
        Ok(t)
    }

    fn rebuild_tensor_ref(&self, args: &[V], as_dtype: Option<DType>) -> Option<V> {
        let st = match args.first()? {
            V::Storage(s) => s.clone(),
            _ => return None,
        };
        let offset = match args.get(1)? {
            V::Int(i) if *i >= 0 => *i as u64,
            _ => return None,
        };
        let shape = self.usizes(args.get(2)?)?;
        let stride = self.usizes(args.get(3)?)?;
        if shape.len() != stride.len() || st.key.len() > MAX_NAME || shape.len() > 64 {
            return None;
        }
        let (dtype, storage_numel) = match as_dtype {
            Some(d) => (
                d,
                st.numel.saturating_mul(st.dtype.size() as u64) / d.size() as u64,
            ),
            None => (st.dtype, st.numel),
        };
        Some(V::Tensor(Rc::new(TensorRef {
            storage_key: st.key.to_string(),
            dtype,
            storage_numel,
            offset,
            shape,
            stride,
        })))
    }

    fn opaque(&mut self, class: (String, String), args: Vec<V>) -> PResult<V> {
        self.spend(class.0.len() + class.1.len())?;
        self.count(args.len())?;
        self.node(Node::Object {
            class,
            args,
            state: None,
        })
    }

    /// REDUCE / NEWOBJ: whitelisted reconstructions, everything else recorded as an object.
    fn call(&mut self, func: V, args: V) -> PResult<V> {
        if self.call_depth >= MAX_CALL_DEPTH {
            return perr(format!(
                "calls nested deeper than {MAX_CALL_DEPTH} (_rebuild_from_type of itself?)"
            ));
        }
        self.call_depth += 1;
        let r = self.call_inner(func, args);
        self.call_depth -= 1;
        r
    }

    fn call_inner(&mut self, func: V, args: V) -> PResult<V> {
        let argv: Vec<V> = self
            .tuple_items(&args)
            .map(|a| a.to_vec())
            .unwrap_or_default();
        let g = match &func {
            V::Global(g) => g.clone(),
            _ => return self.opaque(("<call>".into(), "<non-global>".into()), argv),
        };
        let (m, n) = (g.0.as_str(), g.1.as_str());
        match (m, n) {
            ("torch._utils", "_rebuild_tensor_v2") | ("torch._utils", "_rebuild_tensor") => {
                if let Some(t) = self.rebuild_tensor(&argv, None)? {
                    return Ok(t);
                }
            }
            // New style: an untyped (byte) storage plus an explicit dtype argument.
            ("torch._utils", "_rebuild_tensor_v3") => {
                let dtype = match argv.get(6) {
                    Some(V::Global(g)) if g.0 == "torch" => DType::from_torch_dtype(&g.1),
                    _ => None,
                };
                if let Some(d) = dtype {
                    if let Some(t) = self.rebuild_tensor(&argv, Some(d))? {
                        return Ok(t);
                    }
                }
            }
            ("torch._utils", "_rebuild_parameter")
            | ("torch._utils", "_rebuild_parameter_with_state") => {
                if let Some(t @ V::Tensor(_)) = argv.first() {
                    return Ok(t.clone());
                }
            }
            ("torch._tensor", "_rebuild_from_type_v2")
            | ("torch._tensor", "_rebuild_from_type") => {
                if let (Some(f @ V::Global(_)), Some(inner)) = (argv.first(), argv.get(2)) {
                    let r = self.call(f.clone(), inner.clone())?;
                    if matches!(r, V::Tensor(_)) {
                        return Ok(r);
                    }
                }
            }
            ("collections", "OrderedDict") | ("builtins", "dict") | ("__builtin__", "dict") => {
                let mut pairs = Vec::new();
                if let Some(src) = argv.first().and_then(|a| self.tuple_items(a)) {
                    for p in src {
                        if let Some([k, v]) = self.tuple_items(p).map(|x| x.to_vec()).as_deref() {
                            pairs.push((k.clone(), v.clone()));
                        }
                    }
                }
                self.count(pairs.len() * 2)?;
                return self.node(Node::Dict(pairs));
            }
            ("builtins", "set")
            | ("builtins", "frozenset")
            | ("__builtin__", "set")
            | ("__builtin__", "frozenset") => {
                let items = argv
                    .first()
                    .and_then(|a| self.tuple_items(a))
                    .map(|x| x.to_vec())
                    .unwrap_or_default();
                self.count(items.len())?;
                return self.node(Node::Set(items));
            }
            ("torch", "Size") => {
                let items = argv
                    .first()
                    .and_then(|a| self.tuple_items(a))
                    .map(|x| x.to_vec())
                    .unwrap_or_default();
                self.count(items.len())?;
                return self.node(Node::Tuple(items));
            }
            ("torch", "device") => {
                if let Some(V::Str(s)) = argv.first() {
                    let s = match argv.get(1) {
                        Some(V::Int(i)) => format!("{s}:{i}"),
                        _ => s.to_string(),
                    };
                    return Ok(V::Str(s.into()));
                }
            }
            ("_codecs", "encode") => {
                if let (Some(V::Str(s)), Some(V::Str(enc))) = (argv.first(), argv.get(1)) {
                    if matches!(&**enc, "latin1" | "latin-1" | "iso-8859-1")
                        && s.chars().all(|c| (c as u32) < 256)
                    {
                        self.spend(s.len())?;
                        let b: Vec<u8> = s.chars().map(|c| c as u32 as u8).collect();
                        return Ok(V::Bytes(b.into()));
                    }
                }
            }
            _ => {}
        }
        self.opaque((g.0.clone(), g.1.clone()), argv)
    }

    fn persistent(&mut self, pid: V) -> PResult<V> {
        if let Some([V::Str(tag), V::Global(g), V::Str(key), _loc, V::Int(numel)]) =
            self.tuple_items(&pid)
        {
            let dtype = DType::from_torch_storage(&g.1);
            if let (true, Some(dtype)) = (
                &**tag == "storage" && *numel >= 0 && g.0 == "torch" && key.len() <= MAX_NAME,
                dtype,
            ) {
                let st = Storage {
                    dtype,
                    key: key.clone(),
                    numel: *numel as u64,
                    pid: Box::new(pid.clone()),
                };
                return Ok(V::Storage(Rc::new(st)));
            }
        }
        self.node(Node::PersId(pid))
    }

    fn run(&mut self) -> PResult<V> {
        loop {
            self.ops += 1;
            if self.ops > MAX_OPS {
                return perr(format!("more than {MAX_OPS} opcodes"));
            }
            let op = self.u8()?;
            match op {
                0x80 => {
                    let p = self.u8()?;
                    if p > 5 {
                        return perr(format!("unsupported pickle protocol {p}"));
                    }
                }
                0x95 => {
                    self.u64()?;
                }
                b'.' => {
                    let v = self.pop()?;
                    return Ok(v);
                }
                b'(' => {
                    if self.marks.len() >= MAX_ITEMS {
                        return perr("too many MARKs");
                    }
                    self.marks.push(self.stack.len());
                }
                b'0' => {
                    self.pop()?;
                }
                b'1' => {
                    self.pop_mark()?;
                }
                b'2' => {
                    let v = self.top()?.clone();
                    self.push(v)?;
                }
                b'N' => self.push(V::None)?,
                0x88 => self.push(V::Bool(true))?,
                0x89 => self.push(V::Bool(false))?,
                b'J' => {
                    let v = self.u32()? as i32 as i64;
                    self.push(V::Int(v))?
                }
                b'K' => {
                    let v = self.u8()? as i64;
                    self.push(V::Int(v))?
                }
                b'M' => {
                    let v = self.u16()? as i64;
                    self.push(V::Int(v))?
                }
                0x8a => {
                    let n = self.u8()? as usize;
                    let b = self.take(n)?;
                    let v = long_from_bytes(b);
                    self.push(v)?
                }
                0x8b => {
                    let n = self.u32()? as i32;
                    if n < 0 || n as usize > MAX_BIGINT_BYTES {
                        return perr(format!("LONG4 of {n} bytes is out of bounds"));
                    }
                    let b = self.take(n as usize)?;
                    let v = long_from_bytes(b);
                    self.push(v)?
                }
                b'I' => {
                    let l = self.line_str()?;
                    let v = match l {
                        "01" => V::Bool(true),
                        "00" => V::Bool(false),
                        s => parse_decimal(s)?,
                    };
                    self.push(v)?
                }
                b'L' => {
                    let l = self.line_str()?;
                    let v = parse_decimal(l.strip_suffix('L').unwrap_or(l))?;
                    self.push(v)?
                }
                b'F' => {
                    let l = self.line_str()?;
                    let f =
                        parse_py_float(l).ok_or_else(|| PickleError(format!("bad FLOAT {l:?}")))?;
                    self.push(V::Float(f))?
                }
                b'G' => {
                    let b = self.take(8)?;
                    let mut a = [0u8; 8];
                    a.copy_from_slice(b);
                    self.push(V::Float(f64::from_be_bytes(a)))?
                }
                b'X' => {
                    let n = self.u32()? as u64;
                    let b = self.take_len(n)?;
                    self.push(utf8(b)?)?
                }
                0x8c => {
                    let n = self.u8()? as u64;
                    let b = self.take_len(n)?;
                    self.push(utf8(b)?)?
                }
                0x8d => {
                    let n = self.u64()?;
                    let b = self.take_len(n)?;
                    self.push(utf8(b)?)?
                }
                b'V' => {
                    let l = self.line()?;
                    let s = raw_unicode_escape(l)?;
                    self.push(V::Str(s.into()))?
                }
                b'S' => {
                    let l = self.line()?;
                    let b = py_string_literal(l)?;
                    self.push(str_or_bytes(b))?
                }
                b'T' => {
                    let n = self.u32()? as u64;
                    let b = self.take_len(n)?;
                    self.push(str_or_bytes(b.to_vec()))?
                }
                b'U' => {
                    let n = self.u8()? as u64;
                    let b = self.take_len(n)?;
                    self.push(str_or_bytes(b.to_vec()))?
                }
                b'B' => {
                    let n = self.u32()? as u64;
                    let b = self.take_len(n)?;
                    self.push(V::Bytes(b.into()))?
                }
                b'C' => {
                    let n = self.u8()? as u64;
                    let b = self.take_len(n)?;
                    self.push(V::Bytes(b.into()))?
                }
                0x8e | 0x96 => {
                    let n = self.u64()?;
                    let b = self.take_len(n)?;
                    self.push(V::Bytes(b.into()))?
                }
                0x97 | 0x98 => {
                    return perr(
                        "out-of-band buffers (NEXT_BUFFER/READONLY_BUFFER) are not supported",
                    )
                }
                b']' => {
                    let v = self.node(Node::List(Vec::new()))?;
                    self.push(v)?
                }
                b')' => {
                    let v = self.node(Node::Tuple(Vec::new()))?;
                    self.push(v)?
                }
                b'}' => {
                    let v = self.node(Node::Dict(Vec::new()))?;
                    self.push(v)?
                }
                0x8f => {
                    let v = self.node(Node::Set(Vec::new()))?;
                    self.push(v)?
                }
                b'l' => {
                    let items = self.pop_mark()?;
                    self.count(items.len())?;
                    let v = self.node(Node::List(items))?;
                    self.push(v)?
                }
                b't' => {
                    let items = self.pop_mark()?;
                    self.count(items.len())?;
                    let v = self.node(Node::Tuple(items))?;
                    self.push(v)?
                }
                0x91 => {
                    let items = self.pop_mark()?;
                    self.count(items.len())?;
                    let v = self.node(Node::Set(items))?;
                    self.push(v)?
                }
                0x85..=0x87 => {
                    let n = (op - 0x84) as usize;
                    let mut items = Vec::with_capacity(n);
                    for _ in 0..n {
                        items.push(self.pop()?);
                    }
                    items.reverse();
                    self.count(n)?;
                    let v = self.node(Node::Tuple(items))?;
                    self.push(v)?
                }
                b'd' => {
                    let items = self.pop_mark()?;
                    let v = self.node(Node::Dict(Vec::new()))?;
                    self.set_items(&v, items)?;
                    self.push(v)?
                }
                b'a' => {
                    let item = self.pop()?;
                    let target = self.top()?.clone();
                    self.extend(&target, vec![item])?;
                }
                b'e' | 0x90 => {
                    let items = self.pop_mark()?;
                    let target = self.top()?.clone();
                    self.extend(&target, items)?;
                }
                b's' => {
                    let v = self.pop()?;
                    let k = self.pop()?;
                    let target = self.top()?.clone();
                    self.set_items(&target, vec![k, v])?;
                }
                b'u' => {
                    let items = self.pop_mark()?;
                    let target = self.top()?.clone();
                    self.set_items(&target, items)?;
                }
                b'c' => {
                    let m = self.line_str()?;
                    let n = self.line_str()?;
                    let g = self.global(m, n)?;
                    self.push(g)?
                }
                0x93 => {
                    let n = self.pop()?;
                    let m = self.pop()?;
                    match (m, n) {
                        (V::Str(m), V::Str(n)) => {
                            let g = self.global(&m, &n)?;
                            self.push(g)?
                        }
                        _ => return perr("STACK_GLOBAL needs two strings"),
                    }
                }
                0x82..=0x84 => {
                    let code = match op {
                        0x82 => self.u8()? as u32,
                        0x83 => self.u16()? as u32,
                        _ => self.u32()?,
                    };
                    self.push(V::Global(Rc::new((
                        "copyreg".into(),
                        format!("extension_{code}"),
                    ))))?
                }
                b'R' => {
                    let args = self.pop()?;
                    let func = self.pop()?;
                    let v = self.call(func, args)?;
                    self.push(v)?
                }
                0x81 => {
                    let args = self.pop()?;
                    let cls = self.pop()?;
                    let v = self.call(cls, args)?;
                    self.push(v)?
                }
                0x92 => {
                    let kwargs = self.pop()?;
                    let args = self.pop()?;
                    let cls = self.pop()?;
                    let mut argv: Vec<V> = self
                        .tuple_items(&args)
                        .map(|a| a.to_vec())
                        .unwrap_or_default();
                    argv.push(kwargs);
                    let class = match &cls {
                        V::Global(g) => (g.0.clone(), g.1.clone()),
                        _ => ("<call>".into(), "<non-global>".into()),
                    };
                    let v = self.opaque(class, argv)?;
                    self.push(v)?
                }
                b'i' => {
                    let (m, n) = (self.line_str()?, self.line_str()?);
                    if m.len() > MAX_NAME || n.len() > MAX_NAME {
                        return perr(format!("global name longer than {MAX_NAME}"));
                    }
                    let (m, n) = (m.to_string(), n.to_string());
                    let args = self.pop_mark()?;
                    let v = self.opaque((m, n), args)?;
                    self.push(v)?
                }
                b'o' => {
                    let mut items = self.pop_mark()?;
                    if items.is_empty() {
                        return perr("OBJ without a class");
                    }
                    let cls = items.remove(0);
                    let class = match &cls {
                        V::Global(g) => (g.0.clone(), g.1.clone()),
                        _ => ("<call>".into(), "<non-global>".into()),
                    };
                    let v = self.opaque(class, items)?;
                    self.push(v)?
                }
                b'b' => {
                    let state = self.pop()?;
                    let target = self.top()?.clone();
                    // BUILD sets attributes: kept for opaque objects, ignored elsewhere (a state
                    // dict's `_metadata`, a parameter's hooks) — never items of a dict.
                    if let Some(Node::Object { state: s, .. }) = self.node_mut(&target) {
                        *s = Some(state);
                    }
                }
                b'P' => {
                    let l = self.line()?;
                    let pid = str_or_bytes(l.to_vec());
                    let v = self.persistent(pid)?;
                    self.push(v)?
                }
                b'Q' => {
                    let pid = self.pop()?;
                    let v = self.persistent(pid)?;
                    self.push(v)?
                }
                b'p' => {
                    let idx = parse_index(self.line_str()?)?;
                    self.memo_put(idx)?
                }
                b'q' => {
                    let idx = self.u8()? as u64;
                    self.memo_put(idx)?
                }
                b'r' => {
                    let idx = self.u32()? as u64;
                    self.memo_put(idx)?
                }
                0x94 => {
                    let idx = self.memo.len() as u64;
                    self.memo_put(idx)?
                }
                b'g' => {
                    let idx = parse_index(self.line_str()?)?;
                    self.memo_get(idx)?
                }
                b'h' => {
                    let idx = self.u8()? as u64;
                    self.memo_get(idx)?
                }
                b'j' => {
                    let idx = self.u32()? as u64;
                    self.memo_get(idx)?
                }
                other => {
                    return perr(format!(
                        "unknown opcode {other:#04x} at offset {}",
                        self.pos - 1
                    ))
                }
            }
        }
    }
}

fn utf8(b: &[u8]) -> PResult<V> {
    // Python writes surrogates with `surrogatepass`; accept them lossily rather than fail.
    Ok(V::Str(String::from_utf8_lossy(b).into_owned().into()))
}

fn str_or_bytes(b: Vec<u8>) -> V {
    match String::from_utf8(b) {
        Ok(s) => V::Str(s.into()),
        Err(e) => V::Bytes(e.into_bytes().into()),
    }
}

fn parse_index(s: &str) -> PResult<u64> {
    s.trim()
        .parse::<u64>()
        .map_err(|_| PickleError(format!("bad memo index {s:?}")))
}

fn parse_py_float(s: &str) -> Option<f64> {
    match s.trim() {
        "inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        "nan" => Some(f64::NAN),
        t => t.parse().ok(),
    }
}

/// LONG1/LONG4 payload: little-endian two's complement.
fn long_from_bytes(b: &[u8]) -> V {
    if b.is_empty() {
        return V::Int(0);
    }
    if b.len() <= 8 {
        let neg = b[b.len() - 1] & 0x80 != 0;
        let mut a = if neg { [0xffu8; 8] } else { [0u8; 8] };
        a[..b.len()].copy_from_slice(b);
        return V::Int(i64::from_le_bytes(a));
    }
    // Fits in i64 if the upper bytes are pure sign extension.
    let neg = b[b.len() - 1] & 0x80 != 0;
    let ext = if neg { 0xff } else { 0 };
    if b[8..].iter().all(|&x| x == ext) && ((b[7] & 0x80 != 0) == neg) {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[..8]);
        return V::Int(i64::from_le_bytes(a));
    }
    V::BigInt(b.into())
}

/// Text-form integer; beyond i64 it becomes a [`V::BigInt`] (bounded length).
fn parse_decimal(s: &str) -> PResult<V> {
    let s = s.trim();
    if let Ok(i) = s.parse::<i64>() {
        return Ok(V::Int(i));
    }
    let (neg, digits) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if digits.is_empty()
        || digits.len() > MAX_BIGINT_BYTES
        || !digits.bytes().all(|c| c.is_ascii_digit())
    {
        let shown: String = s.chars().take(40).collect();
        return perr(format!("bad integer {shown:?}"));
    }
    // magnitude, little-endian base 256
    let mut mag: Vec<u8> = vec![0];
    for d in digits.bytes() {
        let mut carry = (d - b'0') as u32;
        for byte in mag.iter_mut() {
            let x = *byte as u32 * 10 + carry;
            *byte = (x & 0xff) as u8;
            carry = x >> 8;
        }
        while carry > 0 {
            mag.push((carry & 0xff) as u8);
            carry >>= 8;
        }
    }
    mag.push(0); // room for the sign bit
    if neg {
        // two's complement
        let mut carry = 1u16;
        for byte in mag.iter_mut() {
            let x = (!*byte) as u16 + carry;
            *byte = (x & 0xff) as u8;
            carry = x >> 8;
        }
    }
    Ok(long_from_bytes(&mag))
}

fn hex_digits(b: &[u8]) -> Option<u32> {
    let s = std::str::from_utf8(b).ok()?;
    u32::from_str_radix(s, 16).ok()
}

/// Protocol-0 UNICODE argument: latin-1 text with `\uXXXX` / `\UXXXXXXXX` escapes.
fn raw_unicode_escape(l: &[u8]) -> PResult<String> {
    let mut out = String::with_capacity(l.len());
    let mut i = 0;
    while i < l.len() {
        if l[i] == b'\\' && i + 1 < l.len() && (l[i + 1] == b'u' || l[i + 1] == b'U') {
            let n = if l[i + 1] == b'u' { 4 } else { 8 };
            let cp = l
                .get(i + 2..i + 2 + n)
                .and_then(hex_digits)
                .and_then(char::from_u32);
            match cp {
                Some(c) => {
                    out.push(c);
                    i += 2 + n;
                    continue;
                }
                None => return perr("bad \\u escape in UNICODE"),
            }
        }
        out.push(l[i] as char);
        i += 1;
    }
    Ok(out)
}

/// Protocol-0 STRING argument: a quoted Python literal with backslash escapes.
fn py_string_literal(l: &[u8]) -> PResult<Vec<u8>> {
    let inner = match l {
        [q, rest @ .., q2] if (*q == b'\'' || *q == b'"') && q == q2 => rest,
        _ => return perr("STRING argument is not quoted"),
    };
    let mut out = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        let c = inner[i];
        if c != b'\\' || i + 1 >= inner.len() {
            out.push(c);
            i += 1;
            continue;
        }
        let e = inner[i + 1];
        i += 2;
        match e {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'0'..=b'7' => {
                let mut v = (e - b'0') as u32;
                let mut k = 0;
                while k < 2 && i < inner.len() && (b'0'..=b'7').contains(&inner[i]) {
                    v = v * 8 + (inner[i] - b'0') as u32;
                    i += 1;
                    k += 1;
                }
                out.push((v & 0xff) as u8);
            }
            b'x' => {
                let v = inner
                    .get(i..i + 2)
                    .and_then(hex_digits)
                    .ok_or_else(|| PickleError("bad \\x escape".into()))?;
                out.push(v as u8);
                i += 2;
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

struct Materializer<'a> {
    arena: &'a [Node],
    busy: Vec<bool>,
    items: usize,
    out: usize,
}

impl Materializer<'_> {
    fn count(&mut self, n: usize) -> PResult<()> {
        self.items = self.items.saturating_add(n);
        if self.items > MAX_ITEMS {
            return perr(format!(
                "more than {MAX_ITEMS} items after resolving shared references"
            ));
        }
        self.text(n.saturating_mul(std::mem::size_of::<Value>()))
    }

    /// Charges `n` bytes of output against [`MAX_OUTPUT_BYTES`].
    fn text(&mut self, n: usize) -> PResult<()> {
        self.out = self.out.saturating_add(n);
        if self.out > MAX_OUTPUT_BYTES {
            return perr(format!(
                "expands to more than {} MiB after resolving shared references; refused",
                MAX_OUTPUT_BYTES >> 20
            ));
        }
        Ok(())
    }

    fn seq(&mut self, items: &[V], depth: usize) -> PResult<Vec<Value>> {
        self.count(items.len())?;
        items.iter().map(|x| self.value(x, depth + 1)).collect()
    }

    fn value(&mut self, v: &V, depth: usize) -> PResult<Value> {
        if depth > MAX_DEPTH {
            return perr(format!("nested deeper than {MAX_DEPTH}"));
        }
        Ok(match v {
            V::None => Value::None,
            V::Bool(b) => Value::Bool(*b),
            V::Int(i) => Value::Int(*i),
            V::BigInt(b) => {
                self.text(b.len())?;
                Value::BigInt(b.to_vec())
            }
            V::Float(f) => Value::Float(*f),
            V::Str(s) => {
                self.text(s.len())?;
                Value::Str(s.to_string())
            }
            V::Bytes(b) => {
                self.text(b.len())?;
                Value::Bytes(b.to_vec())
            }
            V::Global(g) => {
                self.text(g.0.len() + g.1.len())?;
                Value::Global {
                    module: g.0.clone(),
                    name: g.1.clone(),
                }
            }
            V::Storage(s) => Value::PersistentId(Box::new(self.value(&s.pid, depth + 1)?)),
            V::Tensor(t) => {
                self.text(t.storage_key.len() + 16 * t.shape.len() + 64)?;
                Value::Tensor((**t).clone())
            }
            V::Node(i) => {
                let i = *i;
                let arena = self.arena;
                let Some(node) = arena.get(i) else {
                    return perr("dangling reference");
                };
                if self.busy[i] {
                    // A container that contains itself: cut the cycle.
                    return Ok(Value::None);
                }
                self.busy[i] = true;
                let out = match node {
                    Node::List(x) => Value::List(self.seq(x, depth)?),
                    Node::Tuple(x) => Value::Tuple(self.seq(x, depth)?),
                    Node::Set(x) => Value::Set(self.seq(x, depth)?),
                    Node::Dict(d) => {
                        self.count(d.len() * 2)?;
                        let mut out = Vec::with_capacity(d.len());
                        for (k, x) in d {
                            out.push((self.value(k, depth + 1)?, self.value(x, depth + 1)?));
                        }
                        Value::Dict(out)
                    }
                    Node::Object { class, args, state } => {
                        self.text(class.0.len() + class.1.len())?;
                        let args = self.seq(args, depth)?;
                        let state = match state {
                            Some(s) => Some(Box::new(self.value(s, depth + 1)?)),
                            None => None,
                        };
                        Value::Object {
                            class: class.clone(),
                            args,
                            state,
                        }
                    }
                    Node::PersId(p) => Value::PersistentId(Box::new(self.value(p, depth + 1)?)),
                };
                self.busy[i] = false;
                out
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &str) -> Value {
        Value::Str(x.into())
    }

    #[test]
    fn protocol2_dict_with_memoised_filled_later_container() {
        // {'a': [1, 2], 'b': <same list>}  — the list is memoised empty and filled afterwards.
        let p = b"\x80\x02}q\x00(X\x01\x00\x00\x00aq\x01]q\x02(K\x01K\x02eX\x01\x00\x00\x00bq\x03h\x02u.";
        let v = parse(p).unwrap();
        let l = Value::List(vec![Value::Int(1), Value::Int(2)]);
        assert_eq!(v, Value::Dict(vec![(s("a"), l.clone()), (s("b"), l)]));
    }

    #[test]
    fn protocol0_text_forms() {
        let p = b"(dp0\nS'x'\np1\nI42\nsVcaf\\u00e9\np2\nF1.5\nsS'big'\nL123456789012345678901234567890L\ns.";
        let v = parse(p).unwrap();
        assert_eq!(lookup(&v, "x"), Some(&Value::Int(42)));
        assert_eq!(lookup(&v, "café"), Some(&Value::Float(1.5)));
        assert!(matches!(lookup(&v, "big"), Some(Value::BigInt(_))));
    }

    #[test]
    fn hostile_reduce_of_os_system_is_never_called() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("pwned");
        let cmd = format!("touch {}", marker.display());
        for (m, n) in [
            ("os", "system"),
            ("posix", "system"),
            ("builtins", "eval"),
            ("subprocess", "Popen"),
        ] {
            let mut p = Vec::new();
            p.extend_from_slice(b"\x80\x02c");
            p.extend_from_slice(format!("{m}\n{n}\n").as_bytes());
            p.push(b'X');
            p.extend_from_slice(&(cmd.len() as u32).to_le_bytes());
            p.extend_from_slice(cmd.as_bytes());
            p.extend_from_slice(b"\x85R.");
            let v = parse(&p).unwrap();
            match v {
                Value::Object { class, args, .. } => {
                    assert_eq!(class, (m.to_string(), n.to_string()));
                    assert_eq!(args, vec![Value::Str(cmd.clone())]);
                }
                other => panic!("expected opaque object, got {other:?}"),
            }
        }
        assert!(!marker.exists());
    }

    #[test]
    fn self_wrapping_rebuild_from_type_is_a_depth_error_not_a_stack_overflow() {
        // L = [g, None, L]; g(*L) unwraps L again and again.
        let mut p =
            b"\x80\x02ctorch._tensor\n_rebuild_from_type_v2\nq\x00]q\x01(h\x00Nh\x01e".to_vec();
        p.extend_from_slice(b"R.");
        let e = parse(&p).unwrap_err();
        assert!(e.0.contains("nested deeper"), "{e}");
    }

    /// `prefix`, then `n` memo references (`h\x00`) collected in one list.
    fn refs(prefix: &[u8], n: usize) -> Vec<u8> {
        let mut p = b"\x80\x02".to_vec();
        p.extend_from_slice(prefix);
        p.extend_from_slice(b"q\x000](");
        for _ in 0..n {
            p.extend_from_slice(b"h\x00");
        }
        p.extend_from_slice(b"e.");
        p
    }

    fn long_str(n: usize) -> Vec<u8> {
        let mut p = b"X".to_vec();
        p.extend_from_slice(&(n as u32).to_le_bytes());
        p.extend(std::iter::repeat_n(b'a', n));
        p
    }

    #[test]
    fn memo_amplification_hits_the_output_budget() {
        // A 1 MB string referenced 2000 times: 2 GB if each reference were copied.
        let e = parse(&refs(&long_str(1 << 20), 2000)).unwrap_err();
        assert!(e.0.contains("MiB"), "{e}");
        // A 100k-item list referenced 1000 times.
        let mut inner = b"](".to_vec();
        for _ in 0..100_000 {
            inner.extend_from_slice(b"K\x01");
        }
        inner.push(b'e');
        let e = parse(&refs(&inner, 1000)).unwrap_err();
        assert!(e.0.contains("items") || e.0.contains("MiB"), "{e}");
        // A tensor whose storage key is 1 MB, referenced 1000 times.
        let mut t =
            b"ctorch._utils\n_rebuild_tensor_v2\n((Vstorage\nctorch\nFloatStorage\n".to_vec();
        t.extend_from_slice(&long_str(1 << 20));
        t.extend_from_slice(b"Vcpu\nK\x04tQK\x00K\x04\x85K\x01\x85\x89tR");
        let e = parse(&refs(&t, 1000)).unwrap_err();
        assert!(e.0.contains("MiB"), "{e}");
    }

    #[test]
    fn repeated_names_and_encodings_hit_the_vm_budget() {
        // STACK_GLOBAL of a 4 MB module name.
        let mut p = b"\x80\x04".to_vec();
        p.extend_from_slice(&long_str(4 << 20));
        p.extend_from_slice(b"\x8c\x01b\x93.");
        let e = parse(&p).unwrap_err();
        assert!(e.0.contains("longer than"), "{e}");
        // _codecs.encode of a 1 MB string, 1000 times (1 GB of output).
        let mut p = b"\x80\x02".to_vec();
        p.extend_from_slice(&long_str(1 << 20));
        p.extend_from_slice(b"q\x000c_codecs\nencode\nq\x010](");
        for _ in 0..1000 {
            p.extend_from_slice(b"h\x01h\x00Vlatin1\n\x86R");
        }
        p.extend_from_slice(b"e.");
        let e = parse(&p).unwrap_err();
        assert!(e.0.contains("MiB"), "{e}");
    }

    #[test]
    fn billion_laughs_is_bounded() {
        // l0 = [x, x]; l1 = [l0, l0]; ... 60 levels: exponential when expanded.
        let mut p = b"\x80\x02]q\x00(K\x01K\x01e".to_vec();
        for i in 1..60u32 {
            p.extend_from_slice(b"]r");
            p.extend_from_slice(&i.to_le_bytes());
            p.extend_from_slice(b"(j");
            p.extend_from_slice(&(i - 1).to_le_bytes());
            p.push(b'j');
            p.extend_from_slice(&(i - 1).to_le_bytes());
            p.push(b'e');
        }
        p.push(b'.');
        let e = parse(&p).unwrap_err();
        assert!(e.0.contains("items") || e.0.contains("MiB"), "{e}");
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let n = 200_000;
        let mut p = b"\x80\x02".to_vec();
        p.extend(std::iter::repeat_n(b']', n));
        p.extend(std::iter::repeat_n(b'a', n - 1));
        p.push(b'.');
        let e = parse(&p).unwrap_err();
        assert!(e.0.contains("nested"), "{e}");
    }

    #[test]
    fn self_referencing_list_is_cut() {
        // l = []; l.append(l)
        let p = b"\x80\x02]q\x00h\x00a.";
        assert_eq!(parse(p).unwrap(), Value::List(vec![Value::None]));
    }

    #[test]
    fn truncated_and_garbage_inputs_error() {
        assert!(parse(b"").is_err());
        assert!(parse(b"\x80\x02X\xff\xff\xff\x7f").is_err());
        assert!(parse(b"\x80\x02\x8d\xff\xff\xff\xff\xff\xff\xff\xff").is_err());
        assert!(parse(b"\x80\x02\x8b\xff\xff\xff\x7f").is_err());
        assert!(parse(b"\x80\x02h\x05.").is_err());
        assert!(parse(b"\x80\x02a.").is_err());
        assert!(parse(b"\x80\x02u.").is_err());
        assert!(parse(b"\xfe").is_err());
        assert!(parse(b"\x80\x02(.").is_err());
    }

    #[test]
    fn bad_text_integer_error_cuts_at_a_char_boundary() {
        // 39 ASCII bytes then a two-byte 'ß': byte 40 falls inside it (fuzz crash 541a8f1c).
        let text = format!("{}ß{}", "7".repeat(39), "1".repeat(10));
        let e = parse_decimal(&text).unwrap_err().to_string();
        assert!(e.contains("bad integer"), "{e}");
        assert!(e.contains('ß'), "{e}");
    }

    #[test]
    fn rebuild_tensor_v2_from_persistent_storage() {
        // _rebuild_tensor_v2(('storage', torch.FloatStorage, '0', 'cpu', 6), 0, (2, 3), (3, 1), False, OrderedDict())
        let mut p = b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x06tQK\x00K\x02K\x03\x86K\x03K\x01\x86\x89ccollections\nOrderedDict\n)RtR.".to_vec();
        let v = parse(&p).unwrap();
        let t = v.as_tensor().expect("tensor");
        assert_eq!(
            (t.storage_key.as_str(), t.dtype, t.storage_numel, t.offset),
            ("0", DType::F32, 6, 0)
        );
        assert_eq!(
            (t.shape.clone(), t.stride.clone()),
            (vec![2, 3], vec![3, 1])
        );
        assert!(t.is_contiguous());
        // An unknown storage type stays an opaque persistent id, and the rebuild an object.
        let at = p.windows(12).position(|w| w == b"FloatStorage").unwrap();
        p[at..at + 12].copy_from_slice(b"EvilxStorage");
        assert!(matches!(parse(&p).unwrap(), Value::Object { .. }));
    }

    #[test]
    fn rebuild_tensor_v3_reads_an_untyped_storage_with_a_dtype() {
        // _rebuild_tensor_v3(('storage', torch.UntypedStorage, '0', 'cpu', 8), 0, (4,), (1,), False, OrderedDict(), torch.bfloat16)
        let p = b"\x80\x02ctorch._utils\n_rebuild_tensor_v3\n((X\x07\x00\x00\x00storagectorch\nUntypedStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x08tQK\x00K\x04\x85K\x01\x85\x89ccollections\nOrderedDict\n)Rctorch\nbfloat16\ntR.";
        let v = parse(p).unwrap();
        let t = v.as_tensor().expect("tensor");
        assert_eq!(
            (t.dtype, t.storage_numel, t.shape.clone()),
            (DType::BF16, 4, vec![4])
        );
    }

    #[test]
    fn long_forms_decode() {
        assert!(matches!(long_from_bytes(&[0xff]), V::Int(-1)));
        assert!(matches!(long_from_bytes(&[0x00, 0x01]), V::Int(256)));
        assert!(matches!(parse_decimal("-5").unwrap(), V::Int(-5)));
        match parse_decimal("-18446744073709551616").unwrap() {
            V::BigInt(b) => assert_eq!(&*b, &[0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff][..b.len()]),
            other => panic!("{other:?}"),
        }
    }
}
