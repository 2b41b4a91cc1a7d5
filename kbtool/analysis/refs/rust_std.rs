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

// more std paths, so the fingerprints record which panics/shims share a shape
#[inline(never)]
fn slices(v: &[u8], a: usize, b: usize, s: &str) -> usize {
    let part = &v[a..b]; // slice_index_order_fail / slice_end_index_len_fail
    let tail = &v[a..]; // slice_start_index_len_fail
    let head = &s[..a]; // str::slice_error_fail
    let mut dst = [0u8; 4];
    dst.copy_from_slice(&part[..4]); // len_mismatch_fail
    part.len() + tail.len() + head.len() + dst[0] as usize
}

#[inline(never)]
fn cells(n: u32) -> u32 {
    use std::cell::RefCell;
    use std::collections::VecDeque;
    use std::rc::Rc;
    let shared = Rc::new(RefCell::new(VecDeque::new()));
    for i in 0..n {
        shared.borrow_mut().push_back(i);
    }
    let first = *shared.borrow().front().unwrap();
    let c = char::from_u32(0x41 + first).expect("char");
    assert_eq!(c.is_alphabetic(), true, "not a letter: {}", c);
    let mut words: Vec<String> = (0..n).map(|i| (n - i).to_string()).collect();
    words.sort();
    let total: u32 = words.iter().map(|w| w.parse::<u32>().unwrap_or(0)).sum();
    let len = shared.borrow().len() as u32;
    total / (n + 1) + len
}

#[no_mangle]
pub extern "C" fn run_more(b: usize) -> u32 {
    slices(b"0123456789", b, b + 5, "abcdef") as u32 + cells(b as u32)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    println!("{}", run(args.len() as u32, 0));
    println!("{}", run_more(args.len()));
}
