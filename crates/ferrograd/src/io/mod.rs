//! MXNet 1.x's NDArray files (`mx.nd.save` / `mx.nd.load`, the `.params` of a checkpoint), read
//! and written byte for byte as MXNet does.
//!
//! A file is a `u64` magic (`0x112`), a reserved `u64`, the arrays (a `u64` count, then one record
//! each) and the keys (a `u64` count, then a `u64` length and the UTF-8 bytes of each; no keys for
//! a list). All integers are little-endian. A record is a magic number for its version, a storage
//! type, the shape, the device, MXNet's element type code and the elements in row-major order.
//!
//! Reading accepts every record version MXNet 1.x reads: V3 (NumPy shapes), V2, V1 and the
//! magic-less records of the earliest versions. Sparse records (`row_sparse`, `csr`) are read
//! and written as their components ([`SparseParts`], through [`load_entries`] /
//! [`save_entries`]); [`load`] gives them as dense arrays with the same values. Arrays on a GPU
//! load onto the CPU. Truncated or corrupt input is
//! an error naming the file and the byte offset; lengths are checked against the bytes that
//! remain before anything is allocated.
//!
//! ```
//! use ferrograd::{io, NDArray};
//! let w = NDArray::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
//! let bytes = io::to_bytes(&io::Arrays::Dict(vec![("arg:w".into(), w)]));
//! let io::Arrays::Dict(loaded) = io::from_bytes(&bytes, "the buffer")? else { unreachable!() };
//! assert_eq!(loaded[0].0, "arg:w");
//! assert_eq!(loaded[0].1.to_f64_vec(), vec![1.0, 2.0, 3.0, 4.0]);
//! # Ok::<(), ferrograd::Error>(())
//! ```

mod codec;
mod reader;
mod sparse;
mod writer;

use std::path::Path;

use reader::{Body, Reader, Record};

use crate::error::{fmt_shape, Error, Result};
use crate::{DType, NDArray};

pub use sparse::SparseParts;

/// How a record stores its array (MXNet's storage types).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storage {
    Dense,
    /// The rows holding a nonzero, and their row numbers.
    RowSparse,
    /// Compressed sparse rows of a 2-D array: values, column numbers, row pointers.
    Csr,
}

impl Storage {
    /// MXNet's name (`stype`).
    pub fn name(self) -> &'static str {
        match self {
            Storage::Dense => "default",
            Storage::RowSparse => "row_sparse",
            Storage::Csr => "csr",
        }
    }

    /// Parses MXNet's name.
    pub fn parse(s: &str) -> Result<Storage> {
        match s {
            "default" => Ok(Storage::Dense),
            "row_sparse" => Ok(Storage::RowSparse),
            "csr" => Ok(Storage::Csr),
            _ => Err(Error::Value(format!(
                "unknown storage type '{s}'; valid values are 'csr', 'default' and 'row_sparse'"
            ))),
        }
    }
}

/// The contents of an NDArray file: a list, or named arrays in file order.
#[derive(Clone)]
pub enum Arrays {
    List(Vec<NDArray>),
    Dict(Vec<(String, NDArray)>),
}

impl Arrays {
    /// The arrays, in file order.
    pub fn arrays(&self) -> Vec<&NDArray> {
        match self {
            Arrays::List(v) => v.iter().collect(),
            Arrays::Dict(v) => v.iter().map(|(_, a)| a).collect(),
        }
    }
}

/// One array of a file as stored: dense, or a sparse array's components.
#[derive(Clone)]
pub enum Stored {
    Dense(NDArray),
    Sparse(SparseParts),
}

impl Stored {
    /// How the array is stored.
    pub fn storage(&self) -> Storage {
        match self {
            Stored::Dense(_) => Storage::Dense,
            Stored::Sparse(p) => p.storage,
        }
    }

    /// The dense values (a sparse array's are built from its components).
    pub fn to_dense(&self) -> Result<NDArray> {
        match self {
            Stored::Dense(a) => Ok(a.clone()),
            Stored::Sparse(p) => p.densify(),
        }
    }
}

/// A file's arrays as stored, in file order, and for a dict file their keys.
#[derive(Clone)]
pub struct Entries {
    pub arrays: Vec<Stored>,
    pub keys: Option<Vec<String>>,
}

impl Entries {
    /// `data` with the storage of each array (`storage[i]`; missing entries are dense): sparse
    /// storage takes the nonzero entries of the dense values.
    pub fn from_dense(data: &Arrays, storage: &[Storage]) -> Result<Entries> {
        let (keys, arrays): (Option<Vec<String>>, Vec<&NDArray>) = match data {
            Arrays::List(v) => (None, v.iter().collect()),
            Arrays::Dict(v) => (Some(v.iter().map(|(k, _)| k.clone()).collect()), v.iter().map(|(_, a)| a).collect()),
        };
        let arrays =
            arrays.into_iter().enumerate().map(|(i, a)| match storage.get(i).copied().unwrap_or(Storage::Dense) {
                Storage::Dense => Ok(Stored::Dense(a.clone())),
                s => SparseParts::from_dense(a, s).map(Stored::Sparse),
            });
        Ok(Entries { arrays: arrays.collect::<Result<_>>()?, keys })
    }

    /// The arrays with dense values, and how each was stored.
    pub fn into_dense(self) -> Result<(Arrays, Vec<Storage>)> {
        let storage = self.arrays.iter().map(Stored::storage).collect();
        let dense = self.arrays.iter().map(Stored::to_dense).collect::<Result<Vec<_>>>()?;
        let arrays = match self.keys {
            None => Arrays::List(dense),
            Some(keys) => Arrays::Dict(keys.into_iter().zip(dense).collect()),
        };
        Ok((arrays, storage))
    }

    fn check(&self) -> Result<()> {
        if let Some(keys) = &self.keys {
            if keys.len() != self.arrays.len() {
                return Err(Error::Value(format!("nd.save: {} keys for {} arrays", keys.len(), self.arrays.len())));
            }
        }
        for (i, a) in self.arrays.iter().enumerate() {
            if let Stored::Sparse(p) = a {
                let name = self.keys.as_ref().map_or_else(|| format!("#{i}"), |k| format!("'{}'", k[i]));
                p.check(&format!("nd.save: sparse array {name}"))?;
            }
        }
        Ok(())
    }

    fn write<W: std::io::Write>(&self, out: &mut W) -> std::io::Result<()> {
        let keys: Vec<&str> = self.keys.iter().flatten().map(String::as_str).collect();
        writer::file(out, &self.arrays, &keys, crate::np_shape())
    }
}

/// Encodes `data` as an NDArray file (V3 records under NumPy shape semantics, else V2, as MXNet).
pub fn to_bytes(data: &Arrays) -> Vec<u8> {
    let entries = Entries {
        arrays: data.arrays().into_iter().cloned().map(Stored::Dense).collect(),
        keys: match data {
            Arrays::List(_) => None,
            Arrays::Dict(v) => Some(v.iter().map(|(k, _)| k.clone()).collect()),
        },
    };
    let mut out = Vec::new();
    // ok to ignore: writing dense arrays into a Vec cannot fail
    let _ = entries.write(&mut out);
    out
}

/// [`to_bytes`] with the storage of each array (`storage[i]`; missing entries are dense).
pub fn to_bytes_stored(data: &Arrays, storage: &[Storage]) -> Result<Vec<u8>> {
    entries_to_bytes(&Entries::from_dense(data, storage)?)
}

/// Encodes arrays as stored (sparse ones from their components) as an NDArray file.
pub fn entries_to_bytes(entries: &Entries) -> Result<Vec<u8>> {
    entries.check()?;
    let mut out = Vec::new();
    entries.write(&mut out).map_err(|e| Error::Runtime(format!("nd.save: {e}")))?;
    Ok(out)
}

/// Writes `data` to the file `path`, encoding as it writes (no whole-file buffer).
pub fn save(path: impl AsRef<Path>, data: &Arrays) -> Result<()> {
    save_stored(path, data, &[])
}

/// [`save`] with the storage of each array (`storage[i]`; missing entries are dense): sparse
/// arrays are written as MXNet's sparse records of their nonzero entries, which MXNet loads as
/// `CSRNDArray` / `RowSparseNDArray`.
pub fn save_stored(path: impl AsRef<Path>, data: &Arrays, storage: &[Storage]) -> Result<()> {
    save_entries(path, &Entries::from_dense(data, storage)?)
}

/// Writes arrays as stored to the file `path`: sparse ones as MXNet's sparse records of their
/// components (as they are, explicitly stored zeros included).
pub fn save_entries(path: impl AsRef<Path>, entries: &Entries) -> Result<()> {
    entries.check()?;
    let path = path.as_ref();
    let cannot = |e: std::io::Error| Error::Runtime(format!("nd.save: cannot write '{}': {e}", path.display()));
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).map_err(cannot)?);
    entries.write(&mut file).and_then(|()| std::io::Write::flush(&mut file)).map_err(cannot)
}

/// Reads the NDArray file `path`, decoding as it reads (the file's bytes are not held in memory).
pub fn load(path: impl AsRef<Path>) -> Result<Arrays> {
    load_stored(path).map(|(a, _)| a)
}

/// [`load`], also returning how the file stored each array (in file order).
pub fn load_stored(path: impl AsRef<Path>) -> Result<(Arrays, Vec<Storage>)> {
    load_entries(path)?.into_dense()
}

/// Reads the NDArray file `path` as stored: sparse records as their components.
pub fn load_entries(path: impl AsRef<Path>) -> Result<Entries> {
    let path = path.as_ref();
    let cannot = |e: std::io::Error| Error::Runtime(format!("nd.load: cannot read '{}': {e}", path.display()));
    let file = std::fs::File::open(path).map_err(cannot)?;
    let len = file.metadata().map_err(cannot)?.len();
    let len =
        usize::try_from(len).map_err(|_| Error::Runtime(format!("nd.load: '{}' is too large", path.display())))?;
    let source = format!("file '{}'", path.display());
    decode(Reader::from_file(file, len, &source), &source)
}

/// Decodes an NDArray file held in memory; `source` names it in errors (`"file 'x.params'"`).
pub fn from_bytes(bytes: &[u8], source: &str) -> Result<Arrays> {
    from_bytes_stored(bytes, source).map(|(a, _)| a)
}

/// [`from_bytes`], also returning how the file stored each array (in file order).
pub fn from_bytes_stored(bytes: &[u8], source: &str) -> Result<(Arrays, Vec<Storage>)> {
    entries_from_bytes(bytes, source)?.into_dense()
}

/// Decodes an NDArray file held in memory as stored: sparse records as their components.
pub fn entries_from_bytes(bytes: &[u8], source: &str) -> Result<Entries> {
    decode(Reader::new(bytes, source), source)
}

fn decode(mut r: Reader<'_>, source: &str) -> Result<Entries> {
    let magic = r.u64("the file header")?;
    if magic != writer::FILE_MAGIC {
        return Err(r.corrupt(0, format!("not an MXNet NDArray file (header {magic:#x}, expected 0x112)")));
    }
    r.u64("the file header")?; // reserved
    let n = r.count("the array count", 4)?;
    let records = (0..n).map(|i| reader::record(&mut r, i)).collect::<Result<Vec<_>>>()?;
    let keys_at = r.pos();
    let n_keys = r.count("the key count", 8)?;
    if n_keys != 0 && n_keys != n {
        return Err(r.corrupt(keys_at, format!("{n_keys} keys for {n} arrays")));
    }
    let mut keys = Vec::with_capacity(n_keys);
    for i in 0..n_keys {
        let at = r.pos();
        let len = r.count(&format!("the length of key #{i}"), 1)?;
        let text = r.take(len, "a key")?;
        let key = std::str::from_utf8(&text).map_err(|_| r.corrupt(at, format!("key #{i} is not UTF-8")))?;
        keys.push(key.to_owned());
    }
    let name = |i: usize| keys.get(i).map_or_else(|| format!("#{i}"), |k| format!("'{k}'"));
    let arrays = records.into_iter().enumerate().map(|(i, rec)| resolve(rec, &name(i), source));
    let arrays = arrays.collect::<Result<_>>()?;
    Ok(Entries { arrays, keys: (!keys.is_empty()).then_some(keys) })
}

/// One record on its own (MXNet's pickled state of an NDArray, `__getstate__()['handle']`).
pub fn array_to_bytes(a: &NDArray) -> Vec<u8> {
    let mut out = Vec::new();
    // ok to ignore: writing into a Vec cannot fail
    let _ = writer::record(&mut out, &Stored::Dense(a.clone()), crate::np_shape(), &mut Vec::new());
    out
}

/// Decodes one record on its own (as [`array_to_bytes`] writes it).
pub fn array_from_bytes(bytes: &[u8], source: &str) -> Result<NDArray> {
    let mut r = Reader::new(bytes, source);
    let rec = reader::record(&mut r, 0)?;
    resolve(rec, "#0", source)?.to_dense()
}

/// The array a record stands for, named `name` in errors: checks what cannot be decided before the
/// keys are known.
fn resolve(rec: Record, name: &str, source: &str) -> Result<Stored> {
    let at = rec.offset;
    let (shape, sparse) = match rec.body {
        // MXNet's never-allocated array: the nearest ferrograd array is an empty one.
        Body::None => return Ok(Stored::Dense(NDArray::zeros(&[0], DType::F32))),
        Body::Unsupported(dtype) => {
            let msg = format!("array {name} in {source} (byte offset {at}) has dtype {dtype}");
            return Err(Error::DType(format!("nd.load: {msg}, which ferrograd does not support")));
        }
        Body::Array(a) => (a.shape().to_vec(), Err(a)),
        Body::Sparse { shape, data, aux } => (shape.clone(), Ok((shape, data, aux))),
    };
    // MXNet reads a zero-size dimension only in the shape semantics it was saved in (in MXNet
    // 1.x's own semantics a 0 means "unknown"); ferrograd refuses the same files so that what
    // loads here also loads in MXNet. Other shapes load in either mode.
    let saved_np = rec.version.np_shape();
    if !shape.is_empty() && shape.contains(&0) && saved_np != crate::np_shape() {
        let (how, turn) = if saved_np { ("on", "True") } else { ("off", "False") };
        return Err(Error::Runtime(format!(
            "nd.load: array {name} in {source} (byte offset {at}) has the zero-size shape {} and \
             was saved with NumPy shape semantics {how}, so it must be loaded with them {how}: \
             use `with mx.util.np_shape({turn}):`",
            fmt_shape(&shape)
        )));
    }
    match sparse {
        Err(dense) => Ok(Stored::Dense(dense)),
        Ok((shape, data, mut aux)) => {
            sparse::check_read(rec.storage, &shape, &mut aux).map_err(|msg| {
                Error::Runtime(format!(
                    "nd.load: {} array {name} in {source} (record at byte offset {at}) is corrupt: {msg}",
                    rec.storage.name()
                ))
            })?;
            Ok(Stored::Sparse(sparse::assemble(rec.storage, shape, data, aux)?))
        }
    }
}
