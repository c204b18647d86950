//! Building and binding symbols from Rust.
//!
//! The core API is complete but low level: [`Symbol::create`] wants a built op and every input,
//! and [`Executor::bind`] wants every argument array in `list_arguments()` order. These helpers
//! add what Python's `sym.FullyConnected(data, num_hidden=..)` and `simple_bind` do: registry
//! look-up by name, automatic `<node>_<arg>` variables for arguments not given, and shape
//! inference to allocate the arguments, gradients and auxiliary states.
//!
//! ```
//! use ferrograd::autograd::GradReq;
//! use ferrograd::executor::Executor;
//! use ferrograd::ops::AttrValue;
//! use ferrograd::symbol::Symbol;
//! use ferrograd::NDArray;
//!
//! // fc = FullyConnected(data, num_hidden=2): creates variables fc_weight and fc_bias.
//! let fc = Symbol::op("FullyConnected", "fc", &[Symbol::var("data")], &[("num_hidden", AttrValue::Int(2))])?;
//! assert_eq!(fc.list_arguments(), vec!["data", "fc_weight", "fc_bias"]);
//! let mut exe = Executor::simple_bind(&fc, &[("data", &[1, 3])], GradReq::Write)?;
//! exe.set_arg("data", &NDArray::from_vec(vec![1.0f32, 2.0, 3.0], &[1, 3])?)?;
//! exe.set_arg("fc_weight", &NDArray::from_vec(vec![1.0f32, 0.0, 1.0, 0.0, 1.0, 0.0], &[2, 3])?)?;
//! exe.set_arg("fc_bias", &NDArray::from_vec(vec![0.5f32, -0.5], &[2])?)?;
//! exe.forward(true, &mut |_, _| {})?;
//! assert_eq!(exe.outputs[0].to_f64_vec(), vec![4.5, 1.5]); // [1+3+0.5, 2-0.5]
//! exe.backward(&[Some(NDArray::ones(&[1, 2], ferrograd::DType::F32))], true)?;
//! // d(sum out)/dW: every row is the data row; d/dbias: ones.
//! assert_eq!(exe.grad_of("fc_weight").map(|g| g.to_f64_vec()), Some(vec![1.0, 2.0, 3.0, 1.0, 2.0, 3.0]));
//! assert_eq!(exe.grad_of("fc_bias").map(|g| g.to_f64_vec()), Some(vec![1.0, 1.0]));
//! # Ok::<(), ferrograd::Error>(())
//! ```

use crate::autograd::GradReq;
use crate::error::{Error, Result};
use crate::executor::{Bindings, Executor};
use crate::ndarray::{Meta, NDArray};
use crate::ops::{registry, AttrValue, Attrs};
use crate::symbol::infer::{infer, Known};
use crate::symbol::Symbol;

impl Symbol {
    /// A free variable (`sym.var(name)`).
    pub fn var(name: &str) -> Symbol {
        Symbol::variable(name, Vec::new())
    }

    /// Applies the registered op `op` as node `name` to `inputs`, with parameters `params`.
    /// Trailing arguments and auxiliary states not given become variables named
    /// `<name>_<argument>` (`fc1_weight`, `fc1_bias`, `bn_moving_mean`), as in MXNet.
    pub fn op(op: &str, name: &str, inputs: &[Symbol], params: &[(&str, AttrValue)]) -> Result<Symbol> {
        let mut attrs = Attrs::new(op);
        for (k, v) in params {
            attrs.items.push((k.to_string(), v.clone()));
        }
        let built = registry::create(op, &attrs)?;
        let mut ins = inputs.to_vec();
        if !built.variadic() {
            let wanted = built.arg_names().iter().chain(built.aux_names());
            for arg in wanted.skip(inputs.len()) {
                ins.push(Symbol::var(&format!("{name}_{arg}")));
            }
        }
        let strings = built.attrs().into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        Symbol::create(built, name, &ins, strings)
    }
}

fn allocate(kind: &str, names: &[String], metas: Vec<Option<Meta>>) -> Result<Vec<NDArray>> {
    names
        .iter()
        .zip(metas)
        .map(|(n, m)| {
            let m = m.ok_or_else(|| {
                Error::Shape(format!("simple_bind: cannot infer the shape of {kind} '{n}'; give it in `shapes`"))
            })?;
            NDArray::try_full("simple_bind", &m.shape, m.dtype, 0.0)
        })
        .collect()
}

impl Executor {
    /// Binds `sym` with zero-filled arguments (and gradients unless `req` is `Null`) whose shapes
    /// are inferred from `shapes` (Python's `simple_bind`). Dtypes follow inference: float32
    /// unless a `__dtype__` attribute says otherwise.
    pub fn simple_bind(sym: &Symbol, shapes: &[(&str, &[usize])], req: GradReq) -> Result<Executor> {
        let mut known = Known::default();
        for (n, s) in shapes {
            known.shapes.insert(n.to_string(), s.to_vec());
        }
        let inf = infer(sym, &known)?;
        let args = allocate("argument", &sym.list_arguments(), inf.args)?;
        let aux = allocate("auxiliary state", &sym.list_auxiliary_states(), inf.aux)?;
        let grads = args.iter().map(|a| (req != GradReq::Null).then(|| NDArray::zeros(a.shape(), a.dtype()))).collect();
        let reqs = vec![req; args.len()];
        Executor::bind(sym, Bindings { args, grads, reqs, aux })
    }

    fn arg_index(&self, name: &str) -> Result<usize> {
        let names = self.symbol().list_arguments();
        names.iter().position(|n| n == name).ok_or_else(|| {
            Error::Value(format!("executor: no argument named '{name}' (arguments: {})", names.join(", ")))
        })
    }

    /// The bound array of argument `name`.
    pub fn arg(&self, name: &str) -> Result<NDArray> {
        Ok(self.args[self.arg_index(name)?].clone())
    }

    /// Copies `value` (broadcast and converted to the bound dtype) into argument `name`.
    pub fn set_arg(&mut self, name: &str, value: &NDArray) -> Result<()> {
        let i = self.arg_index(name)?;
        self.args[i].assign_from(value)
    }

    /// The gradient of argument `name` after [`Executor::backward`] (`None`: unknown name, or no
    /// gradient requested).
    pub fn grad_of(&self, name: &str) -> Option<NDArray> {
        let i = self.arg_index(name).ok()?;
        self.grads.get(i).cloned().flatten()
    }
}
