//! Derive macros behind ferrograd's operator declarations.
//!
//! `#[derive(OpParams)]` turns a plain struct into an op's parameter declaration: each field is
//! one parameter (its name, its Rust type, its default from `#[param(default = ...)]` or none =
//! required, its one-line description from the doc comment). The derive writes the parser (from
//! Python keywords and MXNet's string attributes alike), the attribute serialiser and the schema
//! that signatures, stubs and docs are generated from. `#[derive(ParamEnum)]` makes a fieldless
//! enum a string-valued parameter whose allowed values are its variants.
//!
//! The generated code refers to `crate::ops::params`, so the derives are for the `ferrograd`
//! crate itself.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use syn::{parse_macro_input, Data, DeriveInput, Expr, Fields, LitStr};

/// The doc comment of an item, lines joined with spaces.
fn doc_of(attrs: &[syn::Attribute]) -> String {
    let mut lines = Vec::new();
    for a in attrs {
        if let syn::Meta::NameValue(nv) = &a.meta {
            if nv.path.is_ident("doc") {
                if let Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) = &nv.value {
                    lines.push(s.value().trim().to_string());
                }
            }
        }
    }
    lines.join(" ").trim().to_string()
}

/// `#[param(default = <expr>)]` and `#[param(name = "...")]` on a field or variant.
#[derive(Default)]
struct ParamAttr {
    default: Option<Expr>,
    name: Option<String>,
    /// On an enum: its values are dtypes, so a bad one is a dtype error (a TypeError).
    dtype: bool,
}

fn param_attr(attrs: &[syn::Attribute]) -> syn::Result<ParamAttr> {
    let mut out = ParamAttr::default();
    for a in attrs.iter().filter(|a| a.path().is_ident("param")) {
        a.parse_nested_meta(|m| {
            if m.path.is_ident("default") {
                out.default = Some(m.value()?.parse()?);
                Ok(())
            } else if m.path.is_ident("name") {
                out.name = Some(m.value()?.parse::<LitStr>()?.value());
                Ok(())
            } else if m.path.is_ident("dtype") {
                out.dtype = true;
                Ok(())
            } else {
                Err(m.error("expected `default = <expr>`, `name = \"...\"` or `dtype`"))
            }
        })?;
    }
    Ok(out)
}

/// Derives `crate::ops::params::OpParams` for a struct with named fields.
#[proc_macro_derive(OpParams, attributes(param))]
pub fn derive_op_params(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    op_params(&input).unwrap_or_else(syn::Error::into_compile_error).into()
}

fn op_params(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let ident = &input.ident;
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new_spanned(ident, "OpParams needs a struct"));
    };
    let fields: Vec<&syn::Field> = match &data.fields {
        Fields::Named(f) => f.named.iter().collect(),
        Fields::Unit => Vec::new(),
        Fields::Unnamed(_) => return Err(syn::Error::new_spanned(ident, "OpParams needs named fields")),
    };
    let p = quote!(crate::ops::params);
    let (mut defs, mut parses, mut sers, mut names) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for f in fields {
        let fid = f.ident.as_ref().ok_or_else(|| syn::Error::new_spanned(f, "unnamed field"))?;
        let ty = &f.ty;
        let attr = param_attr(&f.attrs)?;
        let name = attr.name.unwrap_or_else(|| fid.to_string().trim_start_matches("r#").to_string());
        let doc = doc_of(&f.attrs);
        if doc.is_empty() {
            return Err(syn::Error::new_spanned(f, "every parameter needs a one-line doc comment"));
        }
        names.push(name.clone());
        let value = quote!(<#ty as #p::ParamType>::to_value(&self.#fid).to_mx_string());
        let (default, parse, ser) = match &attr.default {
            Some(d) => {
                // Typed, so that `Vec::new()` or `None` need no annotation at the use site.
                let d = quote!({
                    let d: #ty = #d;
                    d
                });
                (
                    quote!(Some(<#ty as #p::ParamType>::to_value(&(#d)))),
                    quote!(a.param_or::<#ty>(#name, || #d)?),
                    quote!(if self.#fid != (#d) {
                        out.push((#name, #value));
                    }),
                )
            }
            None => (quote!(None), quote!(a.param_required::<#ty>(#name)?), quote!(out.push((#name, #value));)),
        };
        defs.push(quote! {
            #p::ParamDef {
                name: #name,
                doc: #doc,
                py_type: <#ty as #p::ParamType>::py_type(),
                choices: <#ty as #p::ParamType>::choices(),
                default: #default,
            }
        });
        parses.push(quote!(#fid: #parse));
        sers.push(ser);
    }
    Ok(quote! {
        impl #p::OpParams for #ident {
            const NAMES: &'static [&'static str] = &[#(#names),*];
            fn schema() -> ::std::vec::Vec<#p::ParamDef> {
                ::std::vec![#(#defs),*]
            }
            fn parse(a: &#p::Attrs) -> crate::error::Result<Self> {
                a.check_declared(Self::NAMES)?;
                Ok(Self { #(#parses),* })
            }
            fn to_attrs(&self) -> ::std::vec::Vec<(&'static str, ::std::string::String)> {
                #[allow(unused_mut)]
                let mut out = ::std::vec::Vec::new();
                #(#sers)*
                out
            }
        }
    })
}

/// Derives `crate::ops::params::ParamType` for a fieldless enum: a string parameter whose allowed
/// values are the variants' names (lowercased, or `#[param(name = "...")]`). `#[param(dtype)]` on
/// the enum makes a bad value a dtype error.
#[proc_macro_derive(ParamEnum, attributes(param))]
pub fn derive_param_enum(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    param_enum(&input).unwrap_or_else(syn::Error::into_compile_error).into()
}

fn param_enum(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let ident = &input.ident;
    let Data::Enum(data) = &input.data else {
        return Err(syn::Error::new_spanned(ident, "ParamEnum needs an enum"));
    };
    let p = quote!(crate::ops::params);
    let invalid = if param_attr(&input.attrs)?.dtype {
        quote! {
            fn invalid(msg: ::std::string::String) -> crate::error::Error {
                crate::error::Error::DType(msg)
            }
        }
    } else {
        quote!()
    };
    let (mut vars, mut names) = (Vec::new(), Vec::new());
    for v in &data.variants {
        if !matches!(v.fields, Fields::Unit) {
            return Err(syn::Error::new_spanned(v, "ParamEnum variants carry no data"));
        }
        let name = param_attr(&v.attrs)?.name.unwrap_or_else(|| v.ident.to_string().to_lowercase());
        vars.push(&v.ident);
        names.push(name);
    }
    Ok(quote! {
        impl #ident {
            /// Every value, in declaration order.
            pub const ALL: &'static [#ident] = &[#(#ident::#vars),*];
            /// The value's MXNet string.
            pub fn name(self) -> &'static str {
                match self { #(#ident::#vars => #names),* }
            }
        }
        impl #p::ParamType for #ident {
            fn py_type() -> ::std::string::String {
                let quoted: ::std::vec::Vec<::std::string::String> =
                    [#(#names),*].iter().map(|n| ::std::format!("'{n}'")).collect();
                ::std::format!("Literal[{}]", quoted.join(", "))
            }
            fn choices() -> &'static [&'static str] {
                &[#(#names),*]
            }
            fn parse(v: &#p::AttrValue) -> ::std::result::Result<Self, ::std::string::String> {
                let want = || ::std::format!("one of {}", [#(#names),*].join(", "));
                match v {
                    #p::AttrValue::Str(s) => match s.trim() {
                        #(#names => Ok(#ident::#vars),)*
                        _ => Err(want()),
                    },
                    _ => Err(want()),
                }
            }
            fn to_value(&self) -> #p::AttrValue {
                #p::AttrValue::Str(self.name().to_string())
            }
            #invalid
        }
    })
}
