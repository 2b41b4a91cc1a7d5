//! Reference program for kbtool.analysis fingerprints: Rust std shims (alloc, panic, fmt).
use std::collections::HashMap;
use std::fmt::Write as _;

#[derive(Debug)]
struct Item {
    id: u32,
    label: String,
}

#[inline(never)]
fn build(n: u32) -> Vec<Item> {
    let mut v = Vec::new();
    for i in 0..n {
        v.push(Item { id: i, label: format!("item-{i:04}") });
    }
    v
}

#[inline(never)]
fn pick(v: &[Item], k: usize) -> u32 {
    v[k].id // bounds check
}

#[inline(never)]
fn parse(s: &str) -> u32 {
    s.parse::<u32>().unwrap()
}

#[inline(never)]
fn lookup(m: &HashMap<String, u32>, k: &str) -> u32 {
    *m.get(k).expect("missing key")
}

#[no_mangle]
pub extern "C" fn run(n: u32, k: u32) -> u32 {
    let v = build(n);
    let mut out = String::new();
    for it in &v {
        write!(out, "{:>8}|{:?};", it.label, it).unwrap();
    }
    let b: Box<[u8]> = vec![0u8; n as usize].into_boxed_slice();
    let mut m = HashMap::new();
    m.insert(out.clone(), b.len() as u32);
    let mut grown: Vec<u64> = Vec::with_capacity(2);
    for i in 0..n { grown.push(i as u64 * 3); }
    if k > 1000 {
        panic!("k too large: {}", k);
    }
    pick(&v, k as usize) + parse(&out[..1]) + lookup(&m, &out) + grown.len() as u32
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    println!("{}", run(args.len() as u32, 0));
}
