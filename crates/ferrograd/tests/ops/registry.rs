//! Registry completeness and consistency: every registered op has test cases, differentiability
//! is declared consistently, aliases resolve, metadata matches the ops, attributes round-trip.

use ferrograd::ops::registry::{create, entries, lookup};
use ferrograd::ops::{AttrValue, Attrs};

use crate::table::{cases, FAMILIES};

fn attrs_of(name: &str, params: &[(&'static str, AttrValue)]) -> Attrs {
    let mut a = Attrs::new(name);
    for (k, v) in params {
        a.items.push((k.to_string(), v.clone()));
    }
    a
}

/// Fails for any registry entry without a forward case, any differentiable op without a gradient
/// case, any op marked `NONDIFF` whose `Op::differentiable()` says otherwise, and stale cases.
#[test]
fn every_op_has_test_cases() {
    let table = cases();
    let mut problems = Vec::new();
    for e in entries() {
        let matching: Vec<_> = table.iter().filter(|c| c.name == e.name).collect();
        match matching.len() {
            0 => problems.push(format!("{}: registered but has no forward test case in tests/ops/table.rs", e.name)),
            1 => {}
            n => problems.push(format!("{}: {n} table rows", e.name)),
        }
    }
    for c in &table {
        if !FAMILIES.contains(&c.family) {
            problems.push(format!("{}: unknown family {}", c.name, c.family));
        }
        let Some(e) = entries().iter().find(|e| e.name == c.name) else {
            problems.push(format!("{}: in the test table but not registered (or listed under an alias)", c.name));
            continue;
        };
        let op = match create(e.name, &attrs_of(e.name, &(c.params)())) {
            Ok(op) => op,
            Err(err) => {
                problems.push(format!("{}: sample parameters do not build the op: {err}", c.name));
                continue;
            }
        };
        match (op.differentiable(), c.grad.is_some()) {
            (true, false) => {
                problems.push(format!("{}: Op::differentiable() is true but the table marks it NONDIFF", c.name))
            }
            (false, true) => {
                problems.push(format!("{}: has a gradient case but Op::differentiable() is false", c.name))
            }
            _ => {}
        }
    }
    assert!(problems.is_empty(), "registry/test-table mismatches:\n{}", problems.join("\n"));
}

/// Names and aliases are unique, and an alias builds the same op as its entry.
#[test]
fn aliases_resolve_to_their_entry() {
    let table = cases();
    let mut seen = std::collections::HashSet::new();
    for e in entries() {
        for n in std::iter::once(&e.name).chain(e.aliases) {
            assert!(seen.insert(*n), "name {n} registered twice");
            assert_eq!(lookup(n).map(|x| x.name), Some(e.name), "lookup({n})");
        }
        let params = table.iter().find(|c| c.name == e.name).map(|c| (c.params)()).unwrap_or_default();
        let Ok(op) = create(e.name, &attrs_of(e.name, &params)) else { continue };
        for alias in e.aliases {
            let via = create(alias, &attrs_of(alias, &params)).unwrap_or_else(|err| panic!("alias {alias}: {err}"));
            assert_eq!(via.name(), op.name(), "alias {alias} of {}", e.name);
            assert_eq!(via.attrs(), op.attrs(), "alias {alias} of {}", e.name);
        }
    }
    assert!(lookup("no_such_op").is_none());
}

/// The registry's argument names (what Python signatures show) are the op's own.
#[test]
fn entry_metadata_matches_op() {
    let table = cases();
    for e in entries() {
        let Some(c) = table.iter().find(|c| c.name == e.name) else { continue };
        let op = create(e.name, &attrs_of(e.name, &(c.params)())).unwrap();
        // Registry inputs are the arguments then the auxiliary states. A "name?" is an optional
        // input: the op lists it or not, depending on its parameters (FullyConnected's bias with
        // no_bias, LeakyReLU's gamma for prelu, CTCLoss's lengths).
        let got: Vec<&str> = op.arg_names().iter().chain(op.aux_names()).copied().collect();
        let want: Vec<&str> = (e.args.iter())
            .filter(|a| !a.ends_with('?') || got.contains(&a.trim_end_matches('?')))
            .map(|a| a.trim_end_matches('?'))
            .collect();
        assert!(got == want, "{}: registry args {:?} vs Op::arg_names + aux_names {:?}", e.name, e.args, got);
        assert!(!e.doc.is_empty(), "{}: empty doc", e.name);
        for (k, _) in (c.params)() {
            assert!(e.param_names().contains(&k), "{}: sample parameter {k} not declared", e.name);
        }
    }
}

/// `Op::attrs()` (MXNet string attributes, as written to symbol JSON) rebuild an identical op.
#[test]
fn attrs_round_trip_through_strings() {
    let table = cases();
    for c in &table {
        let op = create(c.name, &attrs_of(c.name, &(c.params)())).unwrap();
        let Some(e) = lookup(op.name()) else { continue }; // internal names such as _basic_index
        let mut a = Attrs::new(op.name());
        for (k, v) in op.attrs() {
            a.items.push((k.to_string(), AttrValue::Str(v)));
        }
        let again =
            create(e.name, &a).unwrap_or_else(|err| panic!("{}: attrs {:?} do not rebuild: {err}", c.name, op.attrs()));
        assert_eq!(again.name(), op.name(), "{}", c.name);
        assert_eq!(again.attrs(), op.attrs(), "{}", c.name);
    }
}
