//! The integration tests, as one test binary: each file of this folder is a module of it.
//!
//! One binary links the crate once instead of once per file (each link of a debug build
//! is ~165 MB on disk and seconds of a 2-core machine's time); `cargo test --test
//! integration NAME::` runs one file's tests.

mod common;

mod arguments;
mod budgets;
mod cli;
mod cluster_slurm;
mod code_navigation;
mod code_tools;
mod containment;
mod daemon;
mod decoder_bombs;
mod docs_links;
mod document_bombs;
mod documents;
mod documents_browse;
mod fits;
mod hdf5_compression;
mod hdf5_export;
mod hdf5_filters;
mod hdf5_hostile;
mod hdf5_outside;
mod hdf5_tools;
mod index_faults;
mod index_memory;
mod prompts;
mod proxy;
mod rag;
mod rag_llm;
mod rag_semantic;
mod reference_docs;
mod remote_hdf5;
mod remote_http;
mod remote_s3;
mod remote_xrootd;
mod rntuple_reader;
mod rntuple_tools;
mod root_analysis;
mod root_analysis_tools;
mod root_clusters;
mod root_compare;
mod root_cutflow;
mod root_datasets;
mod root_export;
mod root_plot;
mod root_quantities;
mod root_structure;
mod root_tools;
mod service;
mod tasks;
mod tools;
mod transport;
