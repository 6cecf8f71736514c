//! The browser transport of the LLM stage: the previewed request body POSTed with `fetch`, the
//! response read as it arrives (a `ReadableStream` reader) into the core's
//! [`StreamParser`](torchtraceap::llm::stream::StreamParser), or whole when not streaming; an
//! `AbortController` for Cancel and for the timeout. The protocol itself (URL, headers, parsing,
//! HTTP statuses to [`LlmError`]) is the core's `llm::protocol`, shared with the CLI; this
//! module adds only what the browser needs: the transport, and messages that name the page's
//! settings and the CORS flags the CLI never meets.

use std::cell::Cell;
use std::rc::Rc;

use gloo_timers::callback::Timeout;
use js_sys::{Reflect, Uint8Array};
use torchtraceap::llm::protocol::{
    error_from_status, model_ids, models_url, Endpoint, LlmError, LOCAL_SERVER, MAX_RESPONSE_BYTES,
};
use torchtraceap::llm::stream::{parse_response, StreamParser};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    AbortController, Headers, ReadableStreamDefaultReader, ReferrerPolicy, RequestCredentials,
    RequestInit, Response,
};

/// Why a request ended without a complete answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// The user cancelled it.
    Cancelled,
    /// It could not be made at all (not a URL, a key a header cannot carry).
    Invalid(String),
    /// The site's Content Security Policy does not allow requests to this origin: nothing was
    /// sent (the browser would refuse it whatever the server does).
    Blocked { origin: String },
    /// The endpoint failed, refused or could not be reached.
    Llm(LlmError),
}

/// One request to an endpoint: [`Request::send`] runs it, [`Request::cancel`] (from a clone)
/// stops it.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    controller: AbortController,
    cancelled: Rc<Cell<bool>>,
}

impl Request {
    pub fn new() -> Result<Request, Failure> {
        let controller = AbortController::new().map_err(|e| {
            Failure::Invalid(format!(
                "this browser has no AbortController: {}",
                js_text(&e)
            ))
        })?;
        Ok(Request {
            controller,
            cancelled: Rc::new(Cell::new(false)),
        })
    }

    /// Stops the request; `send` then returns `Failure::Cancelled` with what arrived so far
    /// already handed to its `on_text`.
    pub fn cancel(&self) {
        self.cancelled.set(true);
        self.controller.abort();
    }

    /// POSTs `body` (exactly as given: the previewed text) to the endpoint's chat URL; `on_text`
    /// gets each piece of the answer as it arrives (the whole answer at once when not
    /// streaming). Returns the whole answer text.
    pub async fn send(
        &self,
        endpoint: &Endpoint,
        body: &str,
        mut on_text: impl FnMut(&str),
    ) -> Result<String, Failure> {
        let timed_out = Rc::new(Cell::new(false));
        let _timer = {
            let (controller, timed_out) = (self.controller.clone(), Rc::clone(&timed_out));
            let ms = endpoint
                .timeout_s
                .saturating_mul(1000)
                .min(u64::from(u32::MAX)) as u32;
            Timeout::new(ms, move || {
                timed_out.set(true);
                controller.abort();
            })
        };
        let result = self.exchange(endpoint, body, &mut on_text).await;
        if result.is_err() {
            // Closes the connection whatever went wrong (a stream that broke off mid-way).
            self.controller.abort();
        }
        result.map_err(|e| {
            if self.cancelled.get() {
                Failure::Cancelled
            } else if timed_out.get() {
                Failure::Llm(LlmError::Timeout {
                    seconds: endpoint.timeout_s,
                })
            } else {
                e
            }
        })
    }

    async fn exchange(
        &self,
        endpoint: &Endpoint,
        body: &str,
        on_text: &mut impl FnMut(&str),
    ) -> Result<String, Failure> {
        let url = endpoint.chat_url();
        check_url(&url)?;
        if let Some(origin) = blocked_by_policy(&url) {
            return Err(Failure::Blocked { origin });
        }
        let headers = Headers::new().map_err(|e| Failure::Invalid(js_text(&e)))?;
        for (name, value) in endpoint.headers() {
            headers.set(&name, &value).map_err(|e| {
                Failure::Invalid(format!(
                    "the {name} header cannot be sent ({})",
                    js_text(&e)
                ))
            })?;
        }
        let init = RequestInit::new();
        init.set_method("POST");
        init.set_headers(&headers);
        init.set_body(&JsValue::from_str(body));
        init.set_signal(Some(&self.controller.signal()));
        // Nothing of the page goes along: no cookies, no referrer.
        init.set_credentials(RequestCredentials::Omit);
        init.set_referrer_policy(ReferrerPolicy::NoReferrer);
        let window = web_sys::window()
            .ok_or_else(|| Failure::Invalid("no window to send the request from".to_string()))?;
        let unreachable = |e: JsValue| {
            Failure::Llm(LlmError::Unreachable {
                url: url.clone(),
                detail: js_text(&e),
            })
        };
        let response: Response = JsFuture::from(window.fetch_with_str_and_init(&url, &init))
            .await
            .map_err(unreachable)?
            .unchecked_into();
        let broken = |e: JsValue| {
            Failure::Llm(LlmError::Unreachable {
                url: url.clone(),
                detail: format!(
                    "the connection broke while the answer was read: {}",
                    js_text(&e)
                ),
            })
        };
        let status = response.status();
        let stream = response.body().ok_or_else(|| {
            Failure::Llm(LlmError::Malformed {
                message: format!("HTTP {status} without a body"),
            })
        })?;
        // Read piece by piece in every case, so that no response is held beyond
        // MAX_RESPONSE_BYTES (the parser counts a stream's bytes; a whole body is counted here).
        let reader: ReadableStreamDefaultReader = stream.get_reader().unchecked_into();
        let next = || async {
            let chunk = JsFuture::from(reader.read()).await.map_err(broken)?;
            let done = Reflect::get(&chunk, &JsValue::from_str("done"))
                .ok()
                .and_then(|d| d.as_bool())
                .unwrap_or(true);
            if done {
                return Ok(None);
            }
            let bytes: Uint8Array = Reflect::get(&chunk, &JsValue::from_str("value"))
                .map_err(broken)?
                .unchecked_into();
            Ok(Some(bytes.to_vec()))
        };
        if !response.ok() || !endpoint.stream {
            let mut whole = Vec::new();
            while let Some(piece) = next().await? {
                whole.extend_from_slice(&piece);
                if whole.len() > MAX_RESPONSE_BYTES {
                    return Err(Failure::Llm(LlmError::TooLong {
                        bytes: MAX_RESPONSE_BYTES,
                    }));
                }
            }
            let text = String::from_utf8_lossy(&whole);
            if !response.ok() {
                return Err(Failure::Llm(error_from_status(status, &text)));
            }
            let answer = parse_response(endpoint.protocol, &text).map_err(Failure::Llm)?;
            on_text(&answer);
            return Ok(answer);
        }
        let mut parser = StreamParser::new(endpoint.protocol);
        let mut answer = String::new();
        loop {
            let piece = next().await?;
            let done = piece.is_none();
            let pieces = match piece {
                None => parser.finish(),
                Some(bytes) => parser.feed(&bytes),
            }
            .map_err(Failure::Llm)?;
            for piece in pieces {
                on_text(&piece);
                answer.push_str(&piece);
            }
            if done || parser.done() {
                return Ok(answer);
            }
        }
    }
}

/// How long the page waits for the model server on this machine to list its models.
const LOOK_FOR_LOCAL_MS: u32 = 3000;
/// The most characters of a model id the page keeps (it is shown as text).
const MODEL_ID_CHARS: usize = 120;

/// The models the server on this machine ([`LOCAL_SERVER`]) lists at `/v1/models`, when it
/// answers within [`LOOK_FOR_LOCAL_MS`]; nothing is sent but the GET, with no cookies.
pub async fn local_models() -> Vec<String> {
    let url = models_url(LOCAL_SERVER);
    let (Some(window), Ok(controller)) = (web_sys::window(), AbortController::new()) else {
        return Vec::new();
    };
    if blocked_by_policy(&url).is_some() {
        return Vec::new();
    }
    let _timer = {
        let controller = controller.clone();
        Timeout::new(LOOK_FOR_LOCAL_MS, move || controller.abort())
    };
    let init = RequestInit::new();
    init.set_method("GET");
    init.set_signal(Some(&controller.signal()));
    init.set_credentials(RequestCredentials::Omit);
    init.set_referrer_policy(ReferrerPolicy::NoReferrer);
    let Ok(response) = JsFuture::from(window.fetch_with_str_and_init(&url, &init)).await else {
        return Vec::new();
    };
    let response: Response = response.unchecked_into();
    let text = match response.text() {
        Ok(text) if response.ok() => JsFuture::from(text).await.ok(),
        _ => None,
    };
    let listed = text.and_then(|t| t.as_string()).unwrap_or_default();
    model_ids(&listed)
        .into_iter()
        .map(|id| id.chars().take(MODEL_ID_CHARS).collect())
        .collect()
}

/// Refuses what `fetch` cannot send, before sending: not a URL, or not http(s).
fn check_url(url: &str) -> Result<(), Failure> {
    let parsed = web_sys::Url::new(url).map_err(|_| {
        Failure::Invalid(format!(
            "{url} is not a URL: write the server's address, e.g. http://127.0.0.1:8080"
        ))
    })?;
    match parsed.protocol().as_str() {
        "http:" | "https:" => Ok(()),
        other => Err(Failure::Invalid(format!(
            "{url} is a {other} URL: the endpoint must be http:// or https://"
        ))),
    }
}

/// Whether `url` is on a loopback address, which the page's Content Security Policy allows.
fn on_this_machine(url: &str) -> bool {
    web_sys::Url::new(url).is_ok_and(|u| matches!(u.hostname().as_str(), "127.0.0.1" | "localhost"))
}

/// The origin of `url` when the page's policy (its CSP meta tag, `scripts/csp.mjs`) does not
/// allow `fetch` to reach it; `None` when it does, or when the page has no policy.
fn blocked_by_policy(url: &str) -> Option<String> {
    let document = web_sys::window()?.document()?;
    let policy = document
        .query_selector(r#"meta[http-equiv="Content-Security-Policy"]"#)
        .ok()??
        .get_attribute("content")?;
    let target = web_sys::Url::new(url).ok()?;
    let page = web_sys::Url::new(&document.url().ok()?).ok()?;
    (!csp_allows(&policy, &target, &page)).then(|| target.origin())
}

/// Whether a CSP `policy` lets a page at `page` `fetch` `target`: its `connect-src` (else
/// `default-src`) sources, matched as CSP Level 3 matches them (`'self'`, schemes, hosts with
/// `*.` wildcards, ports with `*`; an http source also admits https).
fn csp_allows(policy: &str, target: &web_sys::Url, page: &web_sys::Url) -> bool {
    let directive = |name: &str| {
        policy.split(';').map(str::trim).find_map(|d| {
            let mut words = d.split_whitespace();
            (words.next() == Some(name)).then(|| words.map(str::to_owned).collect::<Vec<_>>())
        })
    };
    let Some(sources) = directive("connect-src").or_else(|| directive("default-src")) else {
        return true;
    };
    let scheme = target.protocol();
    let scheme = scheme.trim_end_matches(':');
    let schemes_match = |source: &str| source == scheme || (source == "http" && scheme == "https");
    let default_port = |scheme: &str| if scheme == "https" { "443" } else { "80" };
    let port = match target.port() {
        p if p.is_empty() => default_port(scheme).to_string(),
        p => p,
    };
    let host = target.hostname().to_ascii_lowercase();
    sources.iter().any(|source| {
        if source == "'self'" {
            return target.origin() == page.origin();
        }
        if source == "*" {
            return matches!(scheme, "http" | "https");
        }
        if let Some(s) = source.strip_suffix(':').filter(|s| !s.contains('/')) {
            return schemes_match(s);
        }
        let (source_scheme, rest) = match source.split_once("://") {
            Some((s, rest)) => (s.to_string(), rest),
            None => (
                page.protocol().trim_end_matches(':').to_string(),
                source.as_str(),
            ),
        };
        let authority = rest.split('/').next().unwrap_or("");
        let (source_host, source_port) = match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        };
        let source_host = source_host.to_ascii_lowercase();
        let host_matches = match source_host.strip_prefix("*.") {
            Some(domain) => host.ends_with(&format!(".{domain}")),
            None => host == source_host,
        };
        let port_matches = match source_port {
            Some("*") => true,
            Some(p) => p == port,
            None => port == default_port(&source_scheme) || port == default_port(scheme),
        };
        schemes_match(&source_scheme) && host_matches && port_matches
    })
}

/// The message of a JavaScript error (`TypeError: Failed to fetch` → `Failed to fetch`).
fn js_text(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| e.as_string())
        .unwrap_or_else(|| format!("{e:?}"))
}

/// What to tell the user about a failure, naming the settings that fix it. `page_origin` is
/// this page's origin (`http://127.0.0.1:8080`), which a cross-origin server must allow.
pub fn message(failure: &Failure, page_origin: &str) -> String {
    match failure {
        Failure::Cancelled => "Cancelled; nothing more is read from the endpoint.".to_string(),
        Failure::Blocked { origin } => format!(
            "This site's security policy (its Content-Security-Policy, connect-src) does not let \
             the page reach {origin}, so the browser would refuse the request whatever the server \
             does: nothing was sent. This is the site's setting, not the server's: its owner \
             widens it by building the site with TTAP_CSP_CONNECT_SRC=\"{origin}\" (see \
             docs/DEPLOY.md). Or use an endpoint on this machine (127.0.0.1 or localhost), which \
             the policy allows."
        ),
        Failure::Invalid(what) => format!(
            "The request could not be made: {what}. Check the endpoint URL and the API key in the LLM settings."
        ),
        Failure::Llm(e) => match e {
            LlmError::Unauthorized { status, message } => format!(
                "The endpoint refused the API key (HTTP {status}: {message}). Set the key the server \
                 expects in the LLM settings (llama-server --api-key, vLLM --api-key, or your \
                 provider's key)."
            ),
            LlmError::ContextTooLong { message } => format!(
                "The request is longer than the model's context (server: {message}). Lower the token \
                 budget in the LLM settings, or give the server a larger context (llama-server -c, \
                 vLLM --max-model-len, Ollama's num_ctx)."
            ),
            LlmError::Http { status, message } => format!(
                "The endpoint answered HTTP {status}: {message}. Check the URL, the protocol and the \
                 model name in the LLM settings."
            ),
            LlmError::Malformed { message } => format!(
                "The endpoint's answer could not be read ({message}). Is the protocol in the LLM \
                 settings (OpenAI-compatible or Ollama) the one this server speaks?"
            ),
            LlmError::Timeout { seconds } => format!(
                "No complete answer within {seconds} s: the answer was cut there (what arrived is \
                 shown). Raise the timeout, or lower the answer's max tokens, in the LLM settings."
            ),
            LlmError::TooLong { bytes } => format!(
                "The answer was cut after {bytes} bytes, the most this page reads from an endpoint \
                 (what arrived is shown): the server sends far more than an answer. Lower the \
                 answer's max tokens in the LLM settings, or check the server."
            ),
            LlmError::Unreachable { url, detail } => {
                let mut m = format!(
                    "Could not reach {url} ({detail}). Either no server answers at that address, or \
                     it does not allow requests from this page's origin, {page_origin} (CORS: the \
                     browser does not say which). Check the URL in the LLM settings, and start the \
                     server allowing this origin: llama-server --cors-origins {page_origin}; vLLM \
                     --allowed-origins '[\"{page_origin}\"]'; Ollama with \
                     OLLAMA_ORIGINS={page_origin}."
                );
                if !on_this_machine(url) && !url.starts_with(page_origin) {
                    m.push_str(
                        " This page's security policy lets it reach only its own host and servers \
                         on this machine (127.0.0.1, localhost): an endpoint elsewhere must \
                         be named when the site is built (TTAP_CSP_CONNECT_SRC; see \
                         docs/DEPLOY.md).",
                    );
                }
                if page_origin.starts_with("https:") && url.starts_with("http:") {
                    m.push_str(
                        " This page is served over https, so the browser also blocks an http:// \
                         endpoint that is not on this machine: use https for it.",
                    );
                }
                m
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use torchtraceap::llm::protocol::error_from_status;
    use wasm_bindgen_test::wasm_bindgen_test;

    const ORIGIN: &str = "http://127.0.0.1:8080";

    #[wasm_bindgen_test]
    fn every_failure_says_what_to_change() {
        let key = Failure::Llm(error_from_status(
            401,
            r#"{"error":{"code":401,"message":"Invalid API Key","type":"authentication_error"}}"#,
        ));
        let m = message(&key, ORIGIN);
        assert!(
            m.contains("refused the API key (HTTP 401: Invalid API Key)"),
            "{m}"
        );
        assert!(m.contains("LLM settings"), "{m}");
        let context = Failure::Llm(error_from_status(
            400,
            r#"{"error":{"code":400,"message":"request (5000 tokens) exceeds the available context size (4096 tokens)","type":"exceed_context_size_error"}}"#,
        ));
        let m = message(&context, ORIGIN);
        assert!(
            m.starts_with("The request is longer than the model's context"),
            "{m}"
        );
        assert!(m.contains("token budget"), "{m}");
        let http = Failure::Llm(error_from_status(
            404,
            r#"{"error":"model \"x\" not found"}"#,
        ));
        assert!(message(&http, ORIGIN).contains("HTTP 404: model \"x\" not found"));
        let malformed = Failure::Llm(LlmError::Malformed {
            message: "the event stream ended before `data: [DONE]`".into(),
        });
        assert!(message(&malformed, ORIGIN).contains("[DONE]"));
        let slow = Failure::Llm(LlmError::Timeout { seconds: 3 });
        assert!(message(&slow, ORIGIN).contains("within 3 s"));
        assert!(message(&Failure::Cancelled, ORIGIN).starts_with("Cancelled"));
        assert!(
            message(&Failure::Invalid("x is not a URL".into()), ORIGIN).contains("x is not a URL")
        );
    }

    #[wasm_bindgen_test]
    fn an_endpoint_elsewhere_is_said_to_need_the_security_policy_widened() {
        let message_for = |url: &str| {
            message(
                &Failure::Llm(LlmError::Unreachable {
                    url: url.into(),
                    detail: "Failed to fetch".into(),
                }),
                ORIGIN,
            )
        };
        for elsewhere in [
            "https://llm.example.com/v1/chat/completions",
            "http://10.0.0.5:8000/api/chat",
            "http://[::1]:8000/v1",
        ] {
            assert!(
                message_for(elsewhere).contains("TTAP_CSP_CONNECT_SRC"),
                "{elsewhere}"
            );
        }
        for here in ["http://127.0.0.1:9/v1", "http://localhost:11434/api/chat"] {
            assert!(
                !message_for(here).contains("TTAP_CSP_CONNECT_SRC"),
                "{here}"
            );
        }
    }

    #[wasm_bindgen_test]
    fn unreachable_names_the_origin_to_allow_and_each_server_s_flag() {
        let down = Failure::Llm(LlmError::Unreachable {
            url: "http://127.0.0.1:9/v1/chat/completions".into(),
            detail: "Failed to fetch".into(),
        });
        let m = message(&down, ORIGIN);
        for flag in [
            "--cors-origins http://127.0.0.1:8080",
            "--allowed-origins '[\"http://127.0.0.1:8080\"]'",
            "OLLAMA_ORIGINS=http://127.0.0.1:8080",
        ] {
            assert!(m.contains(flag), "{flag} missing: {m}");
        }
        assert!(!m.contains("https"), "{m}");
        let m = message(&down, "https://perf.example.org");
        assert!(m.contains("served over https"), "{m}");
    }

    /// The shipped policy (`scripts/csp.mjs`) with one team endpoint: loopback and the listed
    /// origins pass, anything else is blocked before sending, with a message for the owner.
    #[wasm_bindgen_test]
    fn the_policy_admits_loopback_and_listed_origins_only() {
        let policy = "default-src 'none'; script-src 'self'; connect-src 'self' \
                      http://127.0.0.1:* https://127.0.0.1:* http://localhost:* \
                      https://localhost:* https://llm.example.com http://10.0.0.5:8000 \
                      https://*.corp.example";
        let page = web_sys::Url::new("https://tools.example.org/some/sub/path/").unwrap();
        let allows = |url: &str| csp_allows(policy, &web_sys::Url::new(url).unwrap(), &page);
        for ok in [
            "http://127.0.0.1:9/v1/chat/completions",
            "http://localhost:11434/api/chat",
            "https://llm.example.com/v1/chat/completions",
            "https://llm.example.com:443/v1",
            "http://10.0.0.5:8000/api/chat",
            "https://a.corp.example/v1",
            "https://tools.example.org/llm/v1",
        ] {
            assert!(allows(ok), "{ok}");
        }
        for blocked in [
            "https://llm.example.com:8443/v1",
            "http://10.0.0.5:8001/api/chat",
            "https://evil.example/v1",
            "https://corp.example/v1",
            "http://[::1]:8000/v1",
        ] {
            assert!(!allows(blocked), "{blocked}");
        }
        let m = message(
            &Failure::Blocked {
                origin: "https://evil.example".into(),
            },
            ORIGIN,
        );
        assert!(m.contains("site's security policy"), "{m}");
        assert!(
            m.contains("TTAP_CSP_CONNECT_SRC=\"https://evil.example\""),
            "{m}"
        );
    }
}
