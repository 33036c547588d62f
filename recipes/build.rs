//! Under feature `hook`, links the test executables with `-rdynamic`: a C
//! library loaded as a shared object (libpq, libcurl, opened with dlopen
//! by the `hook_*` tests) finds its `poll`, `recv`, `connect`... in the
//! executable's exported symbols, which are yieldloop's, only if the
//! executable exports them.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_HOOK").is_some() {
        println!("cargo:rustc-link-arg-tests=-rdynamic");
    }
}
