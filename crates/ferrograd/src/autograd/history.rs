//! `get_symbol`: the recorded history of an array as MXNet symbol JSON.
//!
//! Variables are named `var<N>` and op nodes `node_<N>` (MXNet's naming for recorded graphs);
//! constants the recording read (arrays without an entry) become variables too, so the JSON
//! lists every input the computation needs.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Arc;

use super::Entry;
use crate::error::{Error, Result};
use crate::ndarray::NDArray;

/// JSON-escapes a string (names and attribute values are plain ASCII in practice).
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

struct Builder {
    nodes: Vec<String>,
    arg_nodes: Vec<usize>,
    ids: HashMap<usize, usize>,
    vars: usize,
}

impl Builder {
    fn variable(&mut self) -> usize {
        let id = self.nodes.len();
        self.nodes.push(format!("{{\"op\": \"null\", \"name\": \"var{}\", \"inputs\": []}}", self.vars));
        self.vars += 1;
        self.arg_nodes.push(id);
        id
    }

    /// The node id of `entry` (`None` = an untracked constant), adding its history first.
    fn visit(&mut self, entry: Option<&Entry>) -> (usize, usize) {
        let Some(entry) = entry else { return (self.variable(), 0) };
        let (key, out) = match entry {
            Entry::Var(v) => (Arc::as_ptr(v) as usize, 0),
            Entry::Out(n, i) => (Arc::as_ptr(n) as *const () as usize, *i),
        };
        if let Some(&id) = self.ids.get(&key) {
            return (id, out);
        }
        let id = match entry {
            Entry::Var(_) => self.variable(),
            Entry::Out(n, _) => {
                let inputs: Vec<(usize, usize)> = n.inputs.iter().map(|e| self.visit(e.as_ref())).collect();
                let id = self.nodes.len();
                let attrs = n.op.attrs();
                let mut s = format!("{{\"op\": {}, \"name\": \"node_{id}\"", quote(n.op.name()));
                if !attrs.is_empty() {
                    let kv: Vec<String> = attrs.iter().map(|(k, v)| format!("{}: {}", quote(k), quote(v))).collect();
                    let _ = write!(s, ", \"attrs\": {{{}}}", kv.join(", "));
                }
                let ins: Vec<String> = inputs.iter().map(|(i, o)| format!("[{i}, {o}, 0]")).collect();
                let _ = write!(s, ", \"inputs\": [{}]}}", ins.join(", "));
                self.nodes.push(s);
                id
            }
        };
        self.ids.insert(key, id);
        (id, out)
    }
}

/// The recorded computation that produced `x`, as MXNet symbol JSON with `x` as the only head.
pub fn history_json(x: &NDArray) -> Result<String> {
    let entry = x.entry().ok_or_else(|| {
        Error::Runtime(
            "get_symbol: the array has no recorded history (compute it inside autograd.record() \
from arrays with attach_grad())"
                .into(),
        )
    })?;
    let mut b = Builder { nodes: Vec::new(), arg_nodes: Vec::new(), ids: HashMap::new(), vars: 0 };
    let (head, out) = b.visit(Some(&entry));
    let row_ptr: Vec<String> = (0..=b.nodes.len()).map(|i| i.to_string()).collect();
    let args: Vec<String> = b.arg_nodes.iter().map(usize::to_string).collect();
    Ok(format!(
        "{{\n  \"nodes\": [\n    {}\n  ],\n  \"arg_nodes\": [{}],\n  \"node_row_ptr\": [{}],\n  \"heads\": [[{head}, {out}, 0]],\n  \"attrs\": {{\"mxnet_version\": [\"int\", 10901]}}\n}}",
        b.nodes.join(",\n    "),
        args.join(", "),
        row_ptr.join(", ")
    ))
}
