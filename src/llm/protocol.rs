//! The chat protocols, without a transport: request bodies, incremental stream parsers, the
//! answer's lenient reading and the mapping of failures to messages. The CLI sends with
//! [`super::client`]; the web app with `fetch`, feeding the same parsers.
//!
//! Its unit tests cover streams parsed the same at every chunk boundary, the byte cap, the key
//! never in a message, broken streams, statuses, lenient answers, bodies and URLs.
//!
//! - OpenAI-compatible `POST {base}/v1/chat/completions` (vLLM, TGI, llama.cpp's llama-server,
//!   Ollama's `/v1`): streamed as server-sent events, `data: {chunk}` lines then `data: [DONE]`.
//! - Ollama's native `POST {base}/api/chat`: streamed as newline-delimited JSON objects, the last
//!   with `"done": true`.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::answer::answer_schema;
use super::summary::Prompt;

/// The most bytes of a response (streamed or whole, error bodies too) any front end reads: an
/// answer of a few thousand tokens is a few tens of kilobytes, and a server that sends more is
/// broken or hostile. Reading stops there with [`LlmError::TooLong`].
pub const MAX_RESPONSE_BYTES: usize = 4 << 20;

/// Which API the endpoint speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Protocol {
    /// `/v1/chat/completions`, server-sent events.
    OpenAi,
    /// Ollama's `/api/chat`, newline-delimited JSON.
    Ollama,
}

/// Where and how to send, except the transport. Serializable for the app's settings (kept in
/// the browser's storage); it holds the key, so it never goes into a report or a share link.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Endpoint {
    /// The server's base URL (`http://127.0.0.1:8080`), or the full chat URL.
    pub url: String,
    pub protocol: Protocol,
    pub model: String,
    /// Sent as `Authorization: Bearer …` when present.
    pub api_key: Option<String>,
    pub temperature: f32,
    /// The most tokens of the answer.
    pub max_tokens: u32,
    pub stream: bool,
    /// Seconds for the whole request.
    pub timeout_s: u64,
    /// Ask for the answer in [`answer_schema`] (OpenAI `response_format`, Ollama `format`);
    /// settings stored before it existed ask for it.
    #[serde(default = "yes")]
    pub structured: bool,
}

fn yes() -> bool {
    true
}

impl Endpoint {
    /// An endpoint with the defaults: temperature 0.2, 1024 answer tokens, streaming, 120 s,
    /// a structured answer.
    pub fn new(url: &str, protocol: Protocol, model: &str) -> Endpoint {
        Endpoint {
            url: url.to_string(),
            protocol,
            model: model.to_string(),
            api_key: None,
            temperature: 0.2,
            max_tokens: 1024,
            stream: true,
            timeout_s: 120,
            structured: true,
        }
    }

    /// The URL to POST to: the base URL with the protocol's path, unless it already ends with it.
    pub fn chat_url(&self) -> String {
        let path = match self.protocol {
            Protocol::OpenAi => "/v1/chat/completions",
            Protocol::Ollama => "/api/chat",
        };
        let base = self.url.trim_end_matches('/');
        if base.ends_with(path) {
            base.to_string()
        } else if self.protocol == Protocol::OpenAi && base.ends_with("/v1") {
            format!("{base}/chat/completions")
        } else {
            format!("{base}{path}")
        }
    }

    /// The request headers (name, value), the key included when set.
    pub fn headers(&self) -> Vec<(String, String)> {
        let mut h = vec![("Content-Type".to_string(), "application/json".to_string())];
        if let Some(k) = self.api_key.as_deref().filter(|k| !k.is_empty()) {
            h.push(("Authorization".to_string(), format!("Bearer {k}")));
        }
        h
    }

    /// The JSON request body for `prompt`: exactly what is sent. With
    /// [`Endpoint::structured`], it asks for [`answer_schema`]: OpenAI's `response_format` of
    /// type `json_schema` (llama.cpp's llama-server, vLLM and Ollama's `/v1` read it too), or
    /// Ollama's `format`.
    pub fn body(&self, prompt: &Prompt) -> String {
        let messages = json!([
            {"role": "system", "content": prompt.system},
            {"role": "user", "content": prompt.user},
        ]);
        let mut v = match self.protocol {
            Protocol::OpenAi => json!({
                "model": self.model,
                "messages": messages,
                "temperature": self.temperature,
                "max_tokens": self.max_tokens,
                "stream": self.stream,
            }),
            Protocol::Ollama => json!({
                "model": self.model,
                "messages": messages,
                "stream": self.stream,
                "options": {"temperature": self.temperature, "num_predict": self.max_tokens},
            }),
        };
        if self.structured {
            let (key, format) = match self.protocol {
                Protocol::OpenAi => (
                    "response_format",
                    json!({
                        "type": "json_schema",
                        "json_schema": {"name": "ttap_answer", "strict": true, "schema": answer_schema()},
                    }),
                ),
                Protocol::Ollama => ("format", answer_schema()),
            };
            v[key] = format;
        }
        v.to_string()
    }
}

/// The keys of a request body that ask for a structured answer (OpenAI's, Ollama's).
const FORMAT_KEYS: [&str; 2] = ["response_format", "format"];

/// `body` without its request for a structured answer, for a server that refused it; `None`
/// when it asks for none (or is not a JSON object).
pub fn without_schema(body: &str) -> Option<String> {
    let mut v: Value = serde_json::from_str(body).ok()?;
    let o = v.as_object_mut()?;
    let mut removed = false;
    for k in FORMAT_KEYS {
        removed |= o.remove(k).is_some();
    }
    removed.then(|| v.to_string())
}

/// Whether `e` may be a server refusing the answer schema (HTTP 400 or 422 other than a
/// context overflow): the request is then sent again without it ([`without_schema`]).
pub fn schema_refused(e: &LlmError) -> bool {
    matches!(
        e,
        LlmError::Http {
            status: 400 | 422,
            ..
        }
    )
}

/// The tokens of an exchange, as the server counted them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub answer_tokens: u64,
    /// Of the prompt's tokens, those the server took from its cache (a prefix it had read for
    /// an earlier request), where it says (OpenAI's `prompt_tokens_details.cached_tokens`).
    #[serde(default)]
    pub cached_tokens: Option<u64>,
    /// Milliseconds the server spent reading the prompt before its first answer token, where it
    /// says (llama.cpp's `timings.prompt_ms`, Ollama's `prompt_eval_duration`).
    #[serde(default)]
    pub prompt_ms: Option<u64>,
}

/// The token counts of a whole (non-streamed) response, when the server gives them (OpenAI's
/// `usage`, Ollama's `prompt_eval_count` and `eval_count`). Native: for the CLI's `client`.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn parse_usage(protocol: Protocol, body: &str) -> Option<Usage> {
    let v: Value = serde_json::from_str(body).ok()?;
    let (prompt, answer) = match protocol {
        Protocol::OpenAi => ("/usage/prompt_tokens", "/usage/completion_tokens"),
        Protocol::Ollama => ("/prompt_eval_count", "/eval_count"),
    };
    let prompt_ms = match protocol {
        Protocol::OpenAi => v.pointer("/timings/prompt_ms").and_then(Value::as_f64),
        Protocol::Ollama => v
            .pointer("/prompt_eval_duration")
            .and_then(Value::as_f64)
            .map(|ns| ns / 1e6),
    };
    Some(Usage {
        prompt_tokens: v.pointer(prompt)?.as_u64()?,
        answer_tokens: v.pointer(answer)?.as_u64()?,
        cached_tokens: v
            .pointer("/usage/prompt_tokens_details/cached_tokens")
            .and_then(Value::as_u64),
        prompt_ms: prompt_ms.map(|ms| ms.round() as u64),
    })
}

/// What went wrong, with what to do about it (`Display`).
#[derive(Clone, Debug, PartialEq)]
pub enum LlmError {
    /// 401 or 403: the key is missing or refused.
    Unauthorized { status: u16, message: String },
    /// The prompt is over the model's context.
    ContextTooLong { message: String },
    /// Any other HTTP error, with the server's message.
    Http { status: u16, message: String },
    /// The stream or response is not what the protocol says.
    Malformed { message: String },
    /// No complete answer within the time limit.
    Timeout { seconds: u64 },
    /// No connection (refused, unknown host, reset).
    Unreachable { url: String, detail: String },
    /// The response passed [`MAX_RESPONSE_BYTES`]; reading stopped there.
    TooLong { bytes: usize },
}

impl std::fmt::Display for LlmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LlmError::Unauthorized { status, message } => write!(
                f,
                "the endpoint refused the API key (HTTP {status}: {message}): set the key the server expects (--api-key or TTAP_LLM_API_KEY)"
            ),
            LlmError::ContextTooLong { message } => write!(
                f,
                "the prompt is longer than the model's context (server: {message}): lower the token budget (--budget) or start the server with a larger context"
            ),
            LlmError::Http { status, message } => write!(
                f,
                "the endpoint answered HTTP {status}: {message}; check the URL, protocol and model name"
            ),
            LlmError::Malformed { message } => write!(
                f,
                "the endpoint's answer is malformed ({message}): is the protocol (openai or ollama) the one this server speaks?"
            ),
            LlmError::Timeout { seconds } => write!(
                f,
                "no complete answer within {seconds} s: raise the timeout (--timeout) or lower max tokens"
            ),
            LlmError::Unreachable { url, detail } => write!(
                f,
                "cannot connect to {url} ({detail}): is the server running and the URL right?"
            ),
            LlmError::TooLong { bytes } => write!(
                f,
                "the answer was cut after {bytes} bytes, the most read from an endpoint ({MAX_RESPONSE_BYTES}; an answer of a few thousand tokens is a few tens of kilobytes): the server sends far more than an answer; lower max tokens or check the server"
            ),
        }
    }
}

impl std::error::Error for LlmError {}

/// The error for an HTTP status that is not success, from the response body.
pub fn error_from_status(status: u16, body: &str) -> LlmError {
    let v: Option<Value> = serde_json::from_str(body).ok();
    let err = v.as_ref().and_then(|v| v.get("error"));
    let message = err
        .and_then(|e| e.get("message").and_then(Value::as_str).or(e.as_str()))
        .or_else(|| v.as_ref()?.get("message")?.as_str())
        .map(str::to_string)
        .unwrap_or_else(|| {
            let t = body.trim();
            if t.is_empty() {
                "no message".to_string()
            } else {
                t.chars().take(300).collect()
            }
        });
    let kind = err
        .and_then(|e| e.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let lower = message.to_lowercase();
    let context = kind == "exceed_context_size_error"
        || lower.contains("context length")
        || lower.contains("context size")
        || lower.contains("context window")
        || (lower.contains("context") && lower.contains("exceed"));
    match status {
        401 | 403 => LlmError::Unauthorized { status, message },
        400 | 413 | 422 if context => LlmError::ContextTooLong { message },
        _ => LlmError::Http { status, message },
    }
}

/// Where a model server on the user's own machine is looked for: the port
/// `scripts/llm-server.sh start-model` starts llama-server with a real model on.
pub const LOCAL_SERVER: &str = "http://127.0.0.1:8081";

/// The URL that lists a server's models (OpenAI's `/v1/models`).
pub fn models_url(base: &str) -> String {
    format!("{}/v1/models", base.trim_end_matches('/'))
}

/// The model ids of a `/v1/models` response (`{"data": [{"id": …}, …]}`), in order.
pub fn model_ids(body: &str) -> Vec<String> {
    let v: Value = serde_json::from_str(body).unwrap_or_default();
    v.get("data")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("id")?.as_str())
        .map(str::to_string)
        .collect()
}

impl Endpoint {
    /// The endpoint for `model` on the [`LOCAL_SERVER`]: a small model on a laptop's CPU, so
    /// answers of at most 512 tokens and up to 5 minutes for one (a 1.5B model on two cores
    /// reads about 35 prompt tokens a second and writes about 10).
    pub fn local(model: &str) -> Endpoint {
        Endpoint {
            max_tokens: 512,
            timeout_s: 300,
            ..Endpoint::new(LOCAL_SERVER, Protocol::OpenAi, model)
        }
    }
}

/// `text` with the endpoint's API key written as `<API key>`: for any message that shows what a
/// server sent back (a server may echo the header it refused).
pub fn without_key(text: &str, endpoint: &Endpoint) -> String {
    match endpoint.api_key.as_deref() {
        Some(key) if !key.trim().is_empty() => text.replace(key, "<API key>"),
        _ => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_never_in_a_message() {
        let mut endpoint = Endpoint::new("http://127.0.0.1:1", Protocol::OpenAi, "m");
        endpoint.api_key = Some("sk-secret-123".into());
        let echoed = error_from_status(401, r#"{"error":{"message":"bad key sk-secret-123"}}"#);
        let shown = without_key(&echoed.to_string(), &endpoint);
        assert!(
            !shown.contains("sk-secret-123") && shown.contains("bad key <API key>"),
            "{shown}"
        );
        endpoint.api_key = None;
        assert_eq!(without_key("sk-secret-123", &endpoint), "sk-secret-123");
    }

    #[test]
    fn statuses_map_to_clear_errors() {
        let e = error_from_status(
            401,
            r#"{"error":{"code":401,"message":"Invalid API Key","type":"authentication_error"}}"#,
        );
        assert!(matches!(e, LlmError::Unauthorized { status: 401, .. }));
        assert!(e.to_string().contains("Invalid API Key"));
        let e = error_from_status(
            400,
            r#"{"error":{"code":400,"message":"request (5000 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}"#,
        );
        assert!(matches!(e, LlmError::ContextTooLong { .. }), "{e:?}");
        let e = error_from_status(
            400,
            r#"{"object":"error","message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError"}"#,
        );
        assert!(matches!(e, LlmError::ContextTooLong { .. }), "{e:?}");
        let e = error_from_status(
            404,
            r#"{"error":"model \"llama9\" not found, try pulling it first"}"#,
        );
        assert_eq!(
            e,
            LlmError::Http {
                status: 404,
                message: "model \"llama9\" not found, try pulling it first".into()
            }
        );
        let e = error_from_status(502, "<html>Bad Gateway</html>");
        assert!(e.to_string().contains("HTTP 502: <html>Bad Gateway</html>"));
        assert!(error_from_status(500, "")
            .to_string()
            .contains("no message"));
    }

    fn prompt() -> Prompt {
        Prompt {
            key: "k".into(),
            title: "t".into(),
            system: "S".into(),
            user: "U".into(),
            window_tokens: 1,
            tokens: 2,
            dropped_lines: 0,
        }
    }

    #[test]
    fn the_answer_schema_is_asked_for_and_can_be_taken_out() {
        let p = prompt();
        let mut e = Endpoint::new("http://h:1", Protocol::OpenAi, "m");
        let body = e.body(&p);
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["response_format"]["type"], "json_schema");
        assert_eq!(
            v["response_format"]["json_schema"]["schema"],
            answer_schema()
        );
        let plain: Value = serde_json::from_str(&without_schema(&body).unwrap()).unwrap();
        assert!(plain.get("response_format").is_none());
        assert_eq!(plain["messages"], v["messages"]);
        e.protocol = Protocol::Ollama;
        let v: Value = serde_json::from_str(&e.body(&p)).unwrap();
        assert_eq!(v["format"], answer_schema());
        e.structured = false;
        let body = e.body(&p);
        assert!(!body.contains("format"));
        assert_eq!(without_schema(&body), None);
        assert!(schema_refused(&error_from_status(
            400,
            "{\"error\":{\"message\":\"bad schema\"}}"
        )));
        assert!(!schema_refused(&error_from_status(
            400,
            r#"{"error":{"message":"x","type":"exceed_context_size_error"}}"#
        )));
        assert!(!schema_refused(&error_from_status(500, "boom")));
        // Settings stored before the field existed ask for the schema.
        let mut old =
            serde_json::to_value(Endpoint::new("http://h:1", Protocol::OpenAi, "m")).unwrap();
        old.as_object_mut().unwrap().remove("structured");
        assert!(serde_json::from_value::<Endpoint>(old).unwrap().structured);
    }

    #[test]
    fn usage_is_read_where_the_server_gives_it() {
        let usage = r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34}}"#;
        assert_eq!(
            parse_usage(Protocol::OpenAi, usage),
            Some(Usage {
                prompt_tokens: 12,
                answer_tokens: 34,
                ..Usage::default()
            })
        );
        // llama.cpp's server: the cached prefix and the time it read the prompt.
        let llama = r#"{"choices":[],"usage":{"prompt_tokens":700,"completion_tokens":90,"prompt_tokens_details":{"cached_tokens":150}},"timings":{"prompt_n":550,"prompt_ms":15234.6}}"#;
        assert_eq!(
            parse_usage(Protocol::OpenAi, llama),
            Some(Usage {
                prompt_tokens: 700,
                answer_tokens: 90,
                cached_tokens: Some(150),
                prompt_ms: Some(15235),
            })
        );
        let ollama =
            r#"{"message":{},"prompt_eval_count":5,"eval_count":6,"prompt_eval_duration":2500000}"#;
        let ollama = parse_usage(Protocol::Ollama, ollama).unwrap();
        assert_eq!((ollama.answer_tokens, ollama.prompt_ms), (6, Some(3)));
        assert_eq!(parse_usage(Protocol::OpenAi, "{}"), None);
    }

    #[test]
    fn a_servers_models_are_listed() {
        let listed = r#"{"object":"list","data":[{"id":"qwen2.5-coder-1.5b","object":"model"},{"id":"other"}]}"#;
        assert_eq!(model_ids(listed), ["qwen2.5-coder-1.5b", "other"]);
        assert!(model_ids("not json").is_empty());
        assert!(model_ids(r#"{"data":[{"name":"x"}]}"#).is_empty());
        assert_eq!(
            models_url("http://127.0.0.1:8081/"),
            "http://127.0.0.1:8081/v1/models"
        );
        let local = Endpoint::local("m");
        assert_eq!(
            local.chat_url(),
            "http://127.0.0.1:8081/v1/chat/completions"
        );
        assert_eq!((local.max_tokens, local.timeout_s), (512, 300));
    }

    #[test]
    fn bodies_and_urls() {
        let mut e = Endpoint::new("http://h:1/", Protocol::OpenAi, "m");
        assert_eq!(e.chat_url(), "http://h:1/v1/chat/completions");
        e.url = "http://h:1/v1".into();
        assert_eq!(e.chat_url(), "http://h:1/v1/chat/completions");
        e.url = "http://h:1/v1/chat/completions".into();
        assert_eq!(e.chat_url(), "http://h:1/v1/chat/completions");
        assert_eq!(e.headers().len(), 1);
        e.api_key = Some("k".into());
        assert_eq!(e.headers()[1], ("Authorization".into(), "Bearer k".into()));
        let p = prompt();
        let v: Value = serde_json::from_str(&e.body(&p)).unwrap();
        assert_eq!(v["messages"][1]["content"], "U");
        assert_eq!(v["stream"], true);
        assert_eq!(v["max_tokens"], 1024);
        let o = Endpoint::new("http://h:11434", Protocol::Ollama, "codellama");
        assert_eq!(o.chat_url(), "http://h:11434/api/chat");
        let v: Value = serde_json::from_str(&o.body(&p)).unwrap();
        assert_eq!(v["options"]["num_predict"], 1024);
        assert_eq!(v["messages"][0]["role"], "system");
    }
}
