//! Compiles quarry's C tree walk (src/formats/code/c/walk.c) against the
//! tree-sitter runtime's internal headers. The tree-sitter crate publishes its
//! `include` folder (`links = "tree-sitter"`); the internal headers sit beside
//! it in `src`. Cargo.toml pins the crate's exact release, since the walk reads
//! the runtime's private structures.

use std::path::PathBuf;

fn main() {
    let walk = "src/formats/code/c/walk.c";
    println!("cargo:rerun-if-changed={walk}");
    let include = PathBuf::from(
        std::env::var_os("DEP_TREE_SITTER_INCLUDE")
            .expect("the tree-sitter crate publishes its include folder"),
    );
    let runtime = include
        .parent()
        .expect("the include folder has a parent")
        .join("src");
    cc::Build::new()
        .file(walk)
        .include(&include)
        .include(&runtime)
        .std("c11")
        .define("_POSIX_C_SOURCE", "200112L")
        .define("_DEFAULT_SOURCE", None)
        // The runtime's headers bounds-check every array access unless told
        // otherwise (.cargo/config.toml does the same for the runtime).
        .define("NDEBUG", None)
        .warnings(true)
        .compile("quarry_walk");
}
