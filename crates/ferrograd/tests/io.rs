//! MXNet NDArray files from Rust: files written by MXNet 1.9.1 (tests/data/mxnet_files, made by
//! tests/fixtures/gen_mxnet_ndarray_files.py) load with their values, saving them again gives the
//! same bytes, and every kind of damage is an error naming the source and the byte offset.

use std::path::PathBuf;
use std::sync::Mutex;

use ferrograd::io::{self, Arrays};
use ferrograd::{DType, Error, NDArray};
use serde_json::Value;

/// NumPy shape semantics are a process-wide switch: tests that depend on it run one at a time.
static MODE: Mutex<()> = Mutex::new(());

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/mxnet_files")
}

fn expected() -> Value {
    let text = std::fs::read_to_string(data_dir().join("expected.json")).expect("expected.json");
    serde_json::from_str(&text).expect("valid JSON")
}

fn file_bytes(name: &str) -> Vec<u8> {
    std::fs::read(data_dir().join(name)).expect("fixture file")
}

/// Runs `f` with NumPy shape semantics set to `on`, restoring the previous setting.
fn with_np_shape<R>(on: bool, f: impl FnOnce() -> R) -> R {
    let prev = ferrograd::set_np_shape(on);
    let r = f();
    ferrograd::set_np_shape(prev);
    r
}

fn as_f64(v: &Value) -> f64 {
    v.as_f64().or_else(|| v.as_bool().map(f64::from)).expect("a number or a bool")
}

fn check_array(a: &NDArray, want: &Value, what: &str) {
    let shape: Vec<usize> = want["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap() as usize).collect();
    assert_eq!(a.shape(), &shape[..], "{what}: shape");
    assert_eq!(a.dtype().name(), want["dtype"].as_str().unwrap(), "{what}: dtype");
    let values: Vec<f64> = want["values"].as_array().unwrap().iter().map(as_f64).collect();
    // serde_json parses decimals to within an ulp; exactness is checked by the saved bytes.
    let got = a.to_f64_vec();
    assert_eq!(got.len(), values.len(), "{what}: size");
    for (g, w) in got.iter().zip(&values) {
        assert!((g - w).abs() <= 1e-15 * w.abs(), "{what}: {g} != {w}");
    }
}

fn int8_supported() -> bool {
    DType::from_name("int8").is_ok()
}

#[test]
fn every_mxnet_file_loads_with_its_values_and_saves_to_the_same_bytes() {
    let _guard = MODE.lock().unwrap_or_else(|e| e.into_inner());
    let exp = expected();
    for (name, want) in exp["files"].as_object().unwrap() {
        if name == "dtype_int8.nd" && !int8_supported() {
            continue; // covered by unsupported_dtypes_name_the_key_and_the_dtype
        }
        let np = want["np_shape"].as_bool().unwrap();
        let (loaded, storage) =
            with_np_shape(np, || io::load_stored(data_dir().join(name))).unwrap_or_else(|e| panic!("{name}: {e}"));
        let arrays = want["arrays"].as_array().unwrap();
        match (&loaded, want["kind"].as_str().unwrap()) {
            (Arrays::List(v), "list") => {
                assert_eq!(v.len(), arrays.len(), "{name}");
                for (i, (a, w)) in v.iter().zip(arrays).enumerate() {
                    check_array(a, w, &format!("{name} #{i}"));
                }
            }
            (Arrays::Dict(v), "dict") => {
                assert_eq!(v.len(), arrays.len(), "{name}");
                for ((k, a), w) in v.iter().zip(arrays) {
                    assert_eq!(k, w["key"].as_str().unwrap(), "{name}: key order");
                    check_array(a, w, &format!("{name} '{k}'"));
                }
            }
            _ => panic!("{name}: loaded the wrong kind"),
        }
        // Written back with the storage each array had (sparse records from their nonzeros).
        let again = with_np_shape(np, || io::to_bytes_stored(&loaded, &storage)).unwrap();
        assert!(again == file_bytes(name), "{name}: saved bytes differ from MXNet's");
        let sparse = storage.iter().filter(|s| **s != io::Storage::Dense).count();
        assert_eq!(sparse, if name == "sparse.nd" { 4 } else { 0 }, "{name}: {storage:?}");
    }
}

#[test]
fn sparse_records_load_as_dense_arrays() {
    let _guard = MODE.lock().unwrap_or_else(|e| e.into_inner());
    let Arrays::Dict(v) = io::load(data_dir().join("sparse.nd")).unwrap() else { panic!("a dict") };
    let csr = &v.iter().find(|(k, _)| k == "csr").unwrap().1;
    assert_eq!(csr.shape(), &[4, 3]);
    assert_eq!(csr.to_f64_vec(), vec![0.0, 1.5, 0.0, 0.0, 0.0, 0.0, 2.0, 0.0, -3.0, 0.0, 0.0, 0.0]);
    let rsp = &v.iter().find(|(k, _)| k == "rsp").unwrap().1;
    assert_eq!(rsp.to_f64_vec(), csr.to_f64_vec());
    let empty = &v.iter().find(|(k, _)| k == "csr_empty").unwrap().1;
    assert_eq!((empty.shape(), empty.to_f64_vec()), (&[2usize, 3][..], vec![0.0; 6]));
}

#[test]
fn sparse_records_load_as_their_components_and_save_to_the_same_bytes() {
    let _guard = MODE.lock().unwrap_or_else(|e| e.into_inner());
    for name in ["sparse_mixed_dict.nd", "sparse_mixed_list.nd", "sparse.nd"] {
        let entries = io::load_entries(data_dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(io::entries_to_bytes(&entries).unwrap() == file_bytes(name), "{name}: bytes differ");
        let from_memory = io::entries_from_bytes(&file_bytes(name), name).unwrap();
        assert_eq!(from_memory.keys, entries.keys, "{name}");
    }
    let entries = io::load_entries(data_dir().join("sparse_mixed_dict.nd")).unwrap();
    assert_eq!(entries.keys.as_deref(), Some(&["csr".to_string(), "rsp".into(), "dense".into()][..]));
    let io::Stored::Sparse(csr) = &entries.arrays[0] else { panic!("csr loads as components") };
    assert_eq!((csr.storage, csr.shape.as_slice()), (io::Storage::Csr, &[4usize, 4][..]));
    assert_eq!(csr.data.to_f64_vec(), vec![1.5, -2.0, 0.0, 4.25]); // the stored zero stays
    assert_eq!(csr.aux[0].to_f64_vec(), vec![0.0, 2.0, 3.0, 3.0, 4.0]);
    assert_eq!(csr.aux[1].to_f64_vec(), vec![0.0, 3.0, 2.0, 1.0]);
    let io::Stored::Sparse(rsp) = &entries.arrays[1] else { panic!("rsp loads as components") };
    assert_eq!((rsp.data.shape(), rsp.aux[0].to_f64_vec()), (&[2usize, 3, 2][..], vec![1.0, 4.0]));
    assert!(matches!(entries.arrays[2], io::Stored::Dense(_)));
}

#[test]
fn sparse_components_that_do_not_fit_are_not_written() {
    let parts = io::SparseParts {
        storage: io::Storage::Csr,
        shape: vec![2, 3],
        data: NDArray::from_vec(vec![1.0f32, 2.0], &[2]).unwrap(),
        aux: vec![NDArray::from_vec(vec![0i64, 1], &[2]).unwrap(), NDArray::from_vec(vec![0i64, 1], &[2]).unwrap()],
    };
    let entries = io::Entries { arrays: vec![io::Stored::Sparse(parts)], keys: Some(vec!["m".into()]) };
    let msg = io::entries_to_bytes(&entries).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.contains("sparse array 'm'") && msg.contains("indptr (2,)"), "{msg}");
    // Row numbers past the end would load nowhere: refused too, as a read refuses them.
    let rows = io::SparseParts {
        storage: io::Storage::RowSparse,
        shape: vec![2, 1],
        data: NDArray::from_vec(vec![1.0f32], &[1, 1]).unwrap(),
        aux: vec![NDArray::from_vec(vec![5i64], &[1]).unwrap()],
    };
    let entries = io::Entries { arrays: vec![io::Stored::Sparse(rows.clone())], keys: None };
    let msg = io::entries_to_bytes(&entries).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.contains("sparse array #0: row index 5 is outside 0..2"), "{msg}");
    assert!(rows.densify().is_err());
}

/// A record in the oldest layouts: optional V1 magic, `u32` (legacy) or `i64` (V1) dims.
fn old_record(v1: bool, dims: &[u32], values: &[f32]) -> Vec<u8> {
    let mut out = Vec::new();
    if v1 {
        out.extend_from_slice(&0xF993_FAC8u32.to_le_bytes());
    }
    out.extend_from_slice(&(dims.len() as u32).to_le_bytes());
    for &d in dims {
        if v1 {
            out.extend_from_slice(&i64::from(d).to_le_bytes());
        } else {
            out.extend_from_slice(&d.to_le_bytes());
        }
    }
    out.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]); // cpu(0)
    out.extend_from_slice(&0i32.to_le_bytes()); // float32
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

fn list_file(records: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for x in [0x112u64, 0, records.len() as u64] {
        out.extend_from_slice(&x.to_le_bytes());
    }
    for r in records {
        out.extend_from_slice(r);
    }
    out.extend_from_slice(&0u64.to_le_bytes());
    out
}

#[test]
fn legacy_and_v1_records_load() {
    let _guard = MODE.lock().unwrap_or_else(|e| e.into_inner());
    let file =
        list_file(&[old_record(false, &[2, 2], &[1.0, 2.0, 3.0, 4.0]), old_record(true, &[3], &[5.0, 6.0, 7.0])]);
    let Arrays::List(v) = io::from_bytes(&file, "legacy").unwrap() else { panic!("a list") };
    assert_eq!((v[0].shape(), v[0].to_f64_vec()), (&[2usize, 2][..], vec![1.0, 2.0, 3.0, 4.0]));
    assert_eq!((v[1].shape(), v[1].to_f64_vec()), (&[3usize][..], vec![5.0, 6.0, 7.0]));
}

fn expect_corrupt(bytes: &[u8], source: &str) -> String {
    match io::from_bytes(bytes, source) {
        Err(Error::Runtime(msg)) => {
            assert!(msg.contains(source) && msg.contains("byte offset"), "{msg}");
            msg
        }
        Err(e) => panic!("expected a corrupt-file error, got {e:?}"),
        Ok(_) => panic!("{} truncated bytes loaded", bytes.len()),
    }
}

#[test]
fn every_truncation_is_an_error_with_the_offset() {
    let _guard = MODE.lock().unwrap_or_else(|e| e.into_inner());
    for name in ["dict.nd", "list.nd", "sparse.nd", "np_shape.nd"] {
        let bytes = file_bytes(name);
        for n in 0..bytes.len() {
            let msg = expect_corrupt(&bytes[..n], "file 'cut'");
            let offset: usize = msg.split("byte offset ").nth(1).unwrap().split(':').next().unwrap().parse().unwrap();
            assert!(offset <= n, "{name}[..{n}]: offset {offset} is past the end: {msg}");
        }
    }
    // The same through files, which are decoded as they are read.
    let bytes = file_bytes("dict.nd");
    let path = std::env::temp_dir().join(format!("ferrograd-io-cut-{}.nd", std::process::id()));
    for n in 0..bytes.len() {
        std::fs::write(&path, &bytes[..n]).unwrap();
        match io::load(&path) {
            Err(Error::Runtime(msg)) => {
                assert!(msg.contains("ferrograd-io-cut") && msg.contains("byte offset"), "{msg}")
            }
            other => panic!("dict.nd[..{n}] from a file: {:?}", other.err()),
        }
    }
    std::fs::remove_file(&path).ok();
}

#[test]
fn huge_length_fields_fail_without_allocating() {
    let _guard = MODE.lock().unwrap_or_else(|e| e.into_inner());
    // A dimension of 2^40 float32 elements in a 60-byte file.
    let mut rec = Vec::new();
    rec.extend_from_slice(&0xF993_FAC9u32.to_le_bytes());
    rec.extend_from_slice(&0i32.to_le_bytes());
    rec.extend_from_slice(&1u32.to_le_bytes());
    rec.extend_from_slice(&(1i64 << 40).to_le_bytes());
    rec.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    let msg = expect_corrupt(&list_file(&[rec.clone()]), "huge");
    assert!(msg.contains("byte offset 56") && msg.contains("the data of array #0"), "{msg}");
    // Dimensions whose product overflows.
    let mut over = rec.clone();
    over[8..12].copy_from_slice(&2u32.to_le_bytes());
    over.splice(20..20, (1i64 << 62).to_le_bytes());
    expect_corrupt(&list_file(&[over]), "overflow");
    // An array count, an ndim and a key length far beyond the file.
    let mut count = list_file(&[]);
    count[16..24].copy_from_slice(&(u64::MAX / 2).to_le_bytes());
    assert!(expect_corrupt(&count, "count").contains("byte offset 16"));
    let mut ndim = list_file(&[rec]);
    ndim[32..36].copy_from_slice(&u32::MAX.to_le_bytes());
    expect_corrupt(&ndim, "ndim");
    let mut keyed = file_bytes("single.nd");
    let n = keyed.len();
    keyed[n - 8..].copy_from_slice(&1u64.to_le_bytes());
    keyed.extend_from_slice(&(1u64 << 50).to_le_bytes());
    expect_corrupt(&keyed, "key length");
}

#[test]
fn corrupt_fields_are_named() {
    let _guard = MODE.lock().unwrap_or_else(|e| e.into_inner());
    let good = file_bytes("single.nd");
    let mut bad_magic = good.clone();
    bad_magic[0] = 0x13;
    assert!(expect_corrupt(&bad_magic, "m").contains("not an MXNet NDArray file"));
    let mut bad_stype = good.clone();
    bad_stype[28] = 9;
    assert!(expect_corrupt(&bad_stype, "s").contains("storage type 9"));
    // type code after magic, stype, ndim, one dim and the device: 24 + 4 + 4 + 4 + 8 + 8
    let mut bad_type = good.clone();
    bad_type[52] = 99;
    assert!(expect_corrupt(&bad_type, "t").contains("element type code 99"));
    let mut bad_keys = good.clone();
    let n = bad_keys.len();
    bad_keys[n - 8..].copy_from_slice(&2u64.to_le_bytes());
    bad_keys.extend_from_slice(&[0; 16]);
    assert!(expect_corrupt(&bad_keys, "k").contains("2 keys for 1 arrays"));
}

#[test]
fn unsupported_dtypes_name_the_key_and_the_dtype() {
    let _guard = MODE.lock().unwrap_or_else(|e| e.into_inner());
    // float16 (code 2) relabelled bfloat16 (code 12): same width, a type ferrograd lacks.
    let mut bytes = file_bytes("dtype_float16.nd");
    // header 24, magic, storage type, ndim, two dims, device: the type code is at 60
    assert_eq!(bytes[60..64], 2i32.to_le_bytes());
    bytes[60] = 12;
    match io::from_bytes(&bytes, "bf16") {
        Err(Error::DType(msg)) => assert!(msg.contains("'float16'") && msg.contains("bfloat16"), "{msg}"),
        other => panic!("expected a dtype error, got {:?}", other.err()),
    }
    if !int8_supported() {
        match io::load(data_dir().join("dtype_int8.nd")) {
            Err(Error::DType(msg)) => assert!(msg.contains("'int8'") && msg.contains("dtype int8"), "{msg}"),
            other => panic!("expected a dtype error, got {:?}", other.err()),
        }
    }
}

#[test]
fn zero_size_shapes_load_only_in_the_semantics_they_were_saved_in() {
    let _guard = MODE.lock().unwrap_or_else(|e| e.into_inner());
    let legacy = data_dir().join("zero_size_legacy.nd");
    let np = data_dir().join("np_shape.nd");
    let msg = with_np_shape(true, || io::load(&legacy)).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.contains("(2, 0)") && msg.contains("np_shape(False)"), "{msg}");
    let msg = with_np_shape(false, || io::load(&np)).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.contains("(0, 3)") && msg.contains("np_shape(True)"), "{msg}");
    // Shapes without a zero load in either mode; a 0-d array round-trips even outside NumPy mode.
    let Arrays::List(v) = with_np_shape(false, || io::load(data_dir().join("list.nd"))).unwrap() else { panic!() };
    let again = with_np_shape(true, || io::from_bytes(&io::to_bytes(&Arrays::List(v.clone())), "np")).unwrap();
    assert_eq!(again.arrays()[1].to_f64_vec(), v[1].to_f64_vec());
    let scalar = NDArray::scalar(2.5f64);
    let back = with_np_shape(false, || io::array_from_bytes(&io::array_to_bytes(&scalar), "scalar")).unwrap();
    assert_eq!((back.shape(), back.to_f64_vec()), (&[][..], vec![2.5]));
}

#[test]
fn round_trips_of_every_dtype_through_a_file() {
    let _guard = MODE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("ferrograd-io-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("all.params");
    let arrays: Vec<(String, NDArray)> = DType::ALL
        .into_iter()
        .map(|d| {
            (d.name().to_string(), NDArray::from_vec(vec![0.0f64, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 3]).unwrap().astype(d))
        })
        .collect();
    // A transposed (non-contiguous) view is saved in its logical order.
    let t = NDArray::from_vec(vec![1i32, 2, 3, 4, 5, 6], &[2, 3]).unwrap();
    let t = ferrograd::call("transpose", &[t], &[]).unwrap().remove(0);
    let mut all = arrays.clone();
    all.push(("transposed".into(), t.clone()));
    io::save(&path, &Arrays::Dict(all)).unwrap();
    let Arrays::Dict(back) = io::load(&path).unwrap() else { panic!("a dict") };
    for ((k, a), (k2, b)) in arrays.iter().zip(&back) {
        assert_eq!((k, a.dtype(), a.shape(), a.to_f64_vec()), (k2, b.dtype(), b.shape(), b.to_f64_vec()));
    }
    assert_eq!(back.last().unwrap().1.to_f64_vec(), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    let missing = io::load(dir.join("nope.params")).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(missing.contains("nope.params"), "{missing}");
    std::fs::remove_dir_all(&dir).ok();
}
