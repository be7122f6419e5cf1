//! The optional semantic model (`[rag] model_dir`): a BERT-family sentence
//! model (`model.safetensors`, `tokenizer.json`, `config.json`) run on the CPU
//! with candle, mean-pooled over the real tokens and L2-normalised, as
//! sentence-transformers does for all-MiniLM-L6-v2. The tokenizer and candle
//! run behind `catch_unwind`: a model that makes them panic is an error, never
//! a crash.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

/// Longest input in tokens (sentence-transformers' `max_seq_length` for
/// all-MiniLM-L6-v2); longer texts are cut.
pub const MAX_TOKENS: usize = 256;
/// Texts embedded in one forward pass.
const BATCH: usize = 16;

/// A loaded sentence model.
pub struct Embedder {
    model: BertModel,
    tokenizer: Tokenizer,
    dims: usize,
    dir: PathBuf,
}

/// all-MiniLM-L6-v2's configuration, for a model folder without config.json.
const MINILM_CONFIG: &str = r#"{"vocab_size":30522,"hidden_size":384,"num_hidden_layers":6,
"num_attention_heads":12,"intermediate_size":1536,"hidden_act":"gelu","hidden_dropout_prob":0.1,
"max_position_embeddings":512,"type_vocab_size":2,"initializer_range":0.02,"layer_norm_eps":1e-12,
"pad_token_id":0,"position_embedding_type":"absolute","model_type":"bert"}"#;

fn caught<T>(what: &str, f: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        Err(anyhow::anyhow!(
            "{what} panicked: {}",
            crate::panics::panic_message(&p)
        ))
    })
}

impl Embedder {
    /// Loads the model in `dir`.
    pub fn load(dir: &Path) -> anyhow::Result<Embedder> {
        caught("loading the model", || Self::load_inner(dir))
            .with_context(|| format!("cannot load the sentence model in {}", dir.display()))
    }

    fn load_inner(dir: &Path) -> anyhow::Result<Embedder> {
        let config = match std::fs::read_to_string(dir.join("config.json")) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => MINILM_CONFIG.to_string(),
            Err(e) => return Err(e).context("config.json"),
        };
        let config: Config = serde_json::from_str(&config).context("config.json")?;
        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| anyhow::anyhow!("tokenizer.json: {e}"))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS.min(config.max_position_embeddings),
                ..TruncationParams::default()
            }))
            .map_err(|e| anyhow::anyhow!("tokenizer truncation: {e}"))?;
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..PaddingParams::default()
        }));
        let weights = std::fs::read(dir.join("model.safetensors")).context("model.safetensors")?;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)?;
        let model = BertModel::load(vb, &config)?;
        Ok(Embedder {
            model,
            tokenizer,
            dims: config.hidden_size,
            dir: dir.to_path_buf(),
        })
    }

    /// The length of the vectors.
    pub fn dims(&self) -> usize {
        self.dims
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Unit vectors of `texts`, in order.
    pub fn embed(&self, texts: &[&str]) -> anyhow::Result<Vec<Vec<f32>>> {
        // Similar lengths batch together, so little of each batch is padding.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut vectors = vec![Vec::new(); texts.len()];
        for batch in order.chunks(BATCH) {
            let inputs: Vec<&str> = batch.iter().map(|&i| texts[i]).collect();
            let embedded = caught("embedding", || self.batch(&inputs))?;
            for (&i, v) in batch.iter().zip(embedded) {
                vectors[i] = v;
            }
        }
        Ok(vectors)
    }

    fn batch(&self, texts: &[&str]) -> anyhow::Result<Vec<Vec<f32>>> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| anyhow::anyhow!("tokenizing: {e}"))?;
        let rows = encodings.len();
        let width = encodings.first().map_or(0, |e| e.get_ids().len());
        let flat = |f: &dyn Fn(&tokenizers::Encoding) -> &[u32]| -> Vec<u32> {
            encodings.iter().flat_map(|e| f(e).to_vec()).collect()
        };
        let device = &Device::Cpu;
        let ids = Tensor::from_vec(flat(&|e| e.get_ids()), (rows, width), device)?;
        let types = Tensor::from_vec(flat(&|e| e.get_type_ids()), (rows, width), device)?;
        let mask = Tensor::from_vec(flat(&|e| e.get_attention_mask()), (rows, width), device)?;
        let hidden = self.model.forward(&ids, &types, Some(&mask))?; // rows × width × dims
        // Mean over the real tokens, then unit length.
        let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
        let counts = mask.sum(1)?.clamp(1e-9f32, f32::MAX)?;
        let mean = summed.broadcast_div(&counts)?;
        let norm = mean
            .sqr()?
            .sum_keepdim(1)?
            .sqrt()?
            .clamp(1e-12f32, f32::MAX)?;
        Ok(mean.broadcast_div(&norm)?.to_vec2::<f32>()?)
    }
}

/// The dot product of two unit vectors: their cosine similarity.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
