//! With feature `hook`, yieldloop's own tests are linked with `-rdynamic`:
//! the executable then exports the calls the hook defines, so that shared
//! libraries (a C library loaded with `dlopen`, or linked) reach them too.
//! Programs using the feature add the same setting themselves; see the
//! docs of `yieldloop::hook`.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let hook = std::env::var_os("CARGO_FEATURE_HOOK").is_some();
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if hook && linux {
        println!("cargo:rustc-link-arg-tests=-rdynamic");
        println!("cargo:rustc-link-arg-examples=-rdynamic");
        println!("cargo:rustc-link-arg-benches=-rdynamic");
    }
}
