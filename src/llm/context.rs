//! How many tokens the model's context holds: `provider.context_window`, else what the server
//! reports, else a safe default (SPEC §13).
//!
//! Two servers say it. llama.cpp's `GET /props` (at the server's root, not under `/v1`) carries
//! `default_generation_settings.n_ctx`, the context of one slot, which is what one request may
//! fill (newer builds also put `n_ctx` at the top level). vLLM's `GET /v1/models` carries
//! `max_model_len` on each model's entry. Ollama and the hosted APIs report neither; there the
//! default holds. llama.cpp's `/v1/models` reports `n_ctx_train`, the context the model was
//! trained with, not the one the server was started with: it is not read.

use std::time::Duration;

use serde_json::Value;

use crate::config::Secret;

/// The window assumed when neither the config nor the server says: small enough for the local
/// servers most routines run on (llama.cpp and Ollama start models with 4K to 8K).
pub const DEFAULT_CONTEXT_WINDOW: u32 = 8192;

/// How long each of the two questions to the server may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// Where a context window came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowSource {
    Config,
    ServerProps,
    ServerModels,
    Default,
}

impl WindowSource {
    /// How a note or an error names it.
    pub fn describe(self) -> &'static str {
        match self {
            WindowSource::Config => "provider.context_window",
            WindowSource::ServerProps => "reported by the server's /props",
            WindowSource::ServerModels => "reported by the server's /v1/models",
            WindowSource::Default => "the default; set provider.context_window",
        }
    }
}

/// The model's context in tokens, and where that number came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextWindow {
    pub tokens: u32,
    pub source: WindowSource,
}

impl ContextWindow {
    pub fn default_window() -> Self {
        ContextWindow { tokens: DEFAULT_CONTEXT_WINDOW, source: WindowSource::Default }
    }
}

/// What a server said about its context, asked once per provider.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerContext {
    /// llama.cpp's `n_ctx`, for whatever model it serves.
    pub props: Option<u32>,
    /// `(id, max_model_len)` of each model `/v1/models` lists with one.
    pub models: Vec<(String, u32)>,
}

impl ServerContext {
    /// The window of `model`: llama.cpp's, else the model's entry, else the one entry listed.
    pub fn window_of(&self, model: &str) -> Option<ContextWindow> {
        if let Some(tokens) = self.props {
            return Some(ContextWindow { tokens, source: WindowSource::ServerProps });
        }
        let entry = self.models.iter().find(|(id, _)| id == model);
        let entry = entry.or(match self.models.as_slice() {
            [one] => Some(one),
            _ => None,
        });
        entry.map(|(_, tokens)| ContextWindow { tokens: *tokens, source: WindowSource::ServerModels })
    }
}

/// `n_ctx` of a llama.cpp `/props` body: the slot's, else the top-level one.
pub fn n_ctx_of_props(body: &Value) -> Option<u32> {
    let slot = body.get("default_generation_settings").and_then(|s| s.get("n_ctx"));
    slot.or_else(|| body.get("n_ctx")).and_then(positive)
}

/// `(id, max_model_len)` of each entry of a `/v1/models` body that has both.
pub fn max_model_lens(body: &Value) -> Vec<(String, u32)> {
    let Some(data) = body.get("data").and_then(Value::as_array) else { return Vec::new() };
    data.iter().filter_map(|m| Some((m.get("id")?.as_str()?.to_string(), positive(m.get("max_model_len")?)?))).collect()
}

fn positive(v: &Value) -> Option<u32> {
    v.as_u64().filter(|n| *n > 0).map(|n| u32::try_from(n).unwrap_or(u32::MAX))
}

/// Asks the server at `base_url` (ending in `/v1` or not) what its context is: `/props` at its
/// root, then, when that says nothing, `/models`. Every failure counts as "nothing said".
pub async fn probe(http: &reqwest::Client, base_url: &str, key: Option<&Secret>) -> ServerContext {
    let base = base_url.trim_end_matches('/');
    let root = base.strip_suffix("/v1").unwrap_or(base);
    let props = get_json(http, &format!("{root}/props"), key).await.as_ref().and_then(n_ctx_of_props);
    let models = match props {
        Some(_) => Vec::new(),
        None => get_json(http, &format!("{base}/models"), key).await.as_ref().map(max_model_lens).unwrap_or_default(),
    };
    let found = ServerContext { props, models };
    tracing::debug!(base_url, props = ?found.props, models = ?found.models, "Asked the model server for its context window.");
    found
}

async fn get_json(http: &reqwest::Client, url: &str, key: Option<&Secret>) -> Option<Value> {
    let mut req = http.get(url).timeout(PROBE_TIMEOUT);
    if let Some(key) = key {
        req = req.bearer_auth(key.expose());
    }
    let resp = tokio::time::timeout(PROBE_TIMEOUT, req.send()).await.ok()?.ok()?;
    if !resp.status().is_success() {
        return None;
    }
    // A context is a few KB of JSON at most; a larger body is not what was asked for.
    let bytes = tokio::time::timeout(PROBE_TIMEOUT, resp.bytes()).await.ok()?.ok()?;
    if bytes.len() > 1024 * 1024 {
        return None;
    }
    serde_json::from_slice(&bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_llama_cpp_props_of_old_and_new_builds() {
        let old = json!({"default_generation_settings": {"n_ctx": 8192, "temperature": 0.8}, "total_slots": 1});
        assert_eq!(n_ctx_of_props(&old), Some(8192));
        let new = json!({"n_ctx": 4096, "model_alias": "qwen"});
        assert_eq!(n_ctx_of_props(&new), Some(4096));
        assert_eq!(n_ctx_of_props(&json!({"default_generation_settings": {"n_ctx": 0}})), None);
        assert_eq!(n_ctx_of_props(&json!({"error": "not found"})), None);
    }

    #[test]
    fn reads_vllm_models_and_picks_the_models_entry() {
        let body = json!({"object": "list", "data": [
            {"id": "qwen", "object": "model", "max_model_len": 32768},
            {"id": "llama", "object": "model", "max_model_len": 8192},
            {"id": "plain", "object": "model"},
        ]});
        let ctx = ServerContext { props: None, models: max_model_lens(&body) };
        assert_eq!(ctx.window_of("llama").map(|w| w.tokens), Some(8192));
        assert_eq!(ctx.window_of("other"), None, "several entries and none named: nothing known");
        let one = ServerContext { props: None, models: vec![("served".into(), 2048)] };
        assert_eq!(one.window_of("alias"), Some(ContextWindow { tokens: 2048, source: WindowSource::ServerModels }));
        let props = ServerContext { props: Some(4096), models: Vec::new() };
        assert_eq!(props.window_of("x").map(|w| w.source), Some(WindowSource::ServerProps));
        // An OpenAI-style list says nothing about the context.
        assert!(max_model_lens(&json!({"data": [{"id": "gpt", "object": "model"}]})).is_empty());
    }
}
