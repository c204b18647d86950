//! Declared parameters from Rust: parsing from keywords and MXNet strings, defaults, the errors
//! for unknown, missing and out-of-set parameters, and the registry's O(1) lookup by alias.

use ferrograd::ops::nn::activation::{ActType, ActivationParams, LeakyReluParams, LeakyType};
use ferrograd::ops::params::{AttrValue, Attrs, OpParams};
use ferrograd::ops::reduce::ReduceParams;
use ferrograd::ops::registry;
use ferrograd::Error;

fn attrs(op: &str, items: &[(&str, AttrValue)]) -> Attrs {
    items.iter().fold(Attrs::new(op), |a, (k, v)| a.with(k, v.clone()))
}

fn s(v: &str) -> AttrValue {
    AttrValue::Str(v.into())
}

#[test]
fn defaults_apply_and_strings_parse_like_keywords() {
    let p = LeakyReluParams::parse(&Attrs::new("LeakyReLU")).unwrap();
    assert_eq!((p.act_type, p.slope, p.lower_bound, p.upper_bound), (LeakyType::Leaky, 0.25, 0.125, 0.334));
    let from_kw = LeakyReluParams::parse(&attrs("LeakyReLU", &[("slope", AttrValue::Float(0.1))])).unwrap();
    let from_str = LeakyReluParams::parse(&attrs("LeakyReLU", &[("slope", s("0.1"))])).unwrap();
    assert_eq!(from_kw, from_str);
    let r = ReduceParams::parse(&attrs("sum", &[("axis", s("(0, 2)")), ("keepdims", s("True"))])).unwrap();
    assert_eq!((r.axis, r.keepdims, r.exclude), (Some(vec![0, 2]), true, false));
    // An explicit None is the value None for an Option parameter.
    let r = ReduceParams::parse(&attrs("sum", &[("axis", AttrValue::None)])).unwrap();
    assert_eq!(r.axis, None);
}

#[test]
fn serialised_attributes_rebuild_the_same_parameters() {
    let p = LeakyReluParams { act_type: LeakyType::Elu, slope: 0.5, lower_bound: 0.125, upper_bound: 0.334 };
    let a = p.to_attrs();
    assert_eq!(a, vec![("act_type", "elu".to_string()), ("slope", "0.5".to_string())]);
    let again = LeakyReluParams::parse(&a.iter().fold(Attrs::new("LeakyReLU"), |x, (k, v)| x.with(k, s(v)))).unwrap();
    assert_eq!(again, p);
    assert_eq!(ActivationParams { act_type: ActType::Tanh }.to_attrs(), vec![("act_type", "tanh".to_string())]);
}

#[test]
fn bad_parameters_are_named_with_what_is_allowed() {
    let err = ActivationParams::parse(&attrs("Activation", &[("act_type", s("gelu"))])).unwrap_err();
    assert!(
        matches!(&err, Error::Value(m) if m.contains("Activation") && m.contains("'act_type'")
        && m.contains("one of relu, sigmoid, softrelu, softsign, tanh") && m.contains("gelu")),
        "{err}"
    );
    let err = ActivationParams::parse(&Attrs::new("Activation")).unwrap_err();
    assert!(matches!(&err, Error::Value(m) if m.contains("required parameter 'act_type'")), "{err}");
    let err = ActivationParams::parse(&attrs("Activation", &[("act", s("relu"))])).unwrap_err();
    assert!(matches!(&err, Error::Type(m) if m.contains("unknown parameter 'act'") && m.contains("act_type")), "{err}");
    let err = LeakyReluParams::parse(&attrs("LeakyReLU", &[("slope", AttrValue::Tuple(vec![1]))])).unwrap_err();
    assert!(matches!(&err, Error::Value(m) if m.contains("'slope' expects a number")), "{err}");
    let err = registry::create("exp", &attrs("exp", &[("scalar", AttrValue::Int(2))])).unwrap_err();
    assert!(matches!(&err, Error::Type(m) if m.contains("exp") && m.contains("takes no parameters")), "{err}");
}

#[test]
fn registry_resolves_aliases_to_one_declaration() {
    let by_alias = registry::lookup("broadcast_plus").unwrap();
    assert_eq!(by_alias.name, "broadcast_add");
    assert!(std::ptr::eq(by_alias, registry::lookup("broadcast_add").unwrap()));
    let op = registry::create("sum_axis", &attrs("sum_axis", &[("axis", AttrValue::Int(1))])).unwrap();
    assert_eq!(op.name(), "sum");
    let schema = (registry::lookup("LeakyReLU").unwrap().params)();
    let slope = schema.iter().find(|p| p.name == "slope").unwrap();
    assert_eq!((slope.py_type.as_str(), slope.default.clone()), ("float", Some(AttrValue::Float(0.25))));
    assert!(!slope.doc.is_empty());
}
