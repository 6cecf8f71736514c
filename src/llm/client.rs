//! The native transport for `ttap explain` and `ttap-dev llm-eval`: a blocking POST with `ureq`, the
//! body streamed into [`StreamParser`] as it arrives; a request whose answer schema the server
//! refuses is sent again without it.

use std::io::Read;
use std::time::Duration;

use super::protocol::{
    error_from_status, parse_usage, schema_refused, without_schema, Endpoint, LlmError, Usage,
    MAX_RESPONSE_BYTES,
};
use super::stream::{parse_response, StreamParser};
use super::summary::Prompt;

/// An answer, and how it came.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    /// The whole answer text.
    pub text: String,
    /// The tokens, when the server counted them (whole responses only).
    pub usage: Option<Usage>,
    /// The server refused the answer schema with this error: the answer is to the same request
    /// without it, free text read leniently.
    pub schema_refused: Option<LlmError>,
}

/// Sends `prompt` to `endpoint` (its [`Endpoint::body`]); see [`send_body`].
pub fn send(
    endpoint: &Endpoint,
    prompt: &Prompt,
    on_text: impl FnMut(&str),
) -> Result<Reply, LlmError> {
    send_body(endpoint, &endpoint.body(prompt), on_text)
}

/// POSTs `body` to `endpoint`; `on_text` gets each piece of the answer as it arrives (the whole
/// answer at once when not streaming). When the server refuses the body's answer schema
/// ([`schema_refused`]), the body is sent once more without it ([`without_schema`]), and the
/// reply says so.
pub fn send_body(
    endpoint: &Endpoint,
    body: &str,
    mut on_text: impl FnMut(&str),
) -> Result<Reply, LlmError> {
    match post(endpoint, body, &mut on_text) {
        Err(e) if schema_refused(&e) => match without_schema(body) {
            Some(plain) => post(endpoint, &plain, &mut on_text).map(|r| Reply {
                schema_refused: Some(e),
                ..r
            }),
            None => Err(e),
        },
        other => other,
    }
}

fn post(
    endpoint: &Endpoint,
    body: &str,
    on_text: &mut impl FnMut(&str),
) -> Result<Reply, LlmError> {
    let url = endpoint.chat_url();
    let timeout = LlmError::Timeout {
        seconds: endpoint.timeout_s,
    };
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(endpoint.timeout_s)))
        .http_status_as_error(false)
        .build()
        .into();
    let mut request = agent.post(&url);
    for (name, value) in endpoint.headers() {
        request = request.header(name, value);
    }
    let response = request
        .send(body)
        .map_err(|e| transport_error(e, &url, &timeout))?;
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let mut reader = body.as_reader();
    let mut read_whole = || {
        let mut bytes = Vec::new();
        (&mut reader)
            .take(MAX_RESPONSE_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| io_error(e, &url, &timeout))?;
        if bytes.len() > MAX_RESPONSE_BYTES {
            return Err(LlmError::TooLong {
                bytes: MAX_RESPONSE_BYTES,
            });
        }
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    };
    if !(200..300).contains(&status) {
        return Err(error_from_status(status, &read_whole()?));
    }
    let mut answer = String::new();
    if !endpoint.stream {
        let whole = read_whole()?;
        answer = parse_response(endpoint.protocol, &whole)?;
        on_text(&answer);
        return Ok(Reply {
            text: answer,
            usage: parse_usage(endpoint.protocol, &whole),
            schema_refused: None,
        });
    }
    let mut parser = StreamParser::new(endpoint.protocol);
    let mut buf = [0u8; 8192];
    loop {
        let n = reader
            .read(&mut buf)
            .map_err(|e| io_error(e, &url, &timeout))?;
        let pieces = if n == 0 {
            parser.finish()?
        } else {
            parser.feed(&buf[..n])?
        };
        for p in pieces {
            on_text(&p);
            answer.push_str(&p);
        }
        if n == 0 {
            return Ok(Reply {
                text: answer,
                usage: None,
                schema_refused: None,
            });
        }
    }
}

fn transport_error(e: ureq::Error, url: &str, timeout: &LlmError) -> LlmError {
    match e {
        ureq::Error::Timeout(_) => timeout.clone(),
        ureq::Error::Io(io) => io_error(io, url, timeout),
        other => LlmError::Unreachable {
            url: url.to_string(),
            detail: other.to_string(),
        },
    }
}

fn io_error(e: std::io::Error, url: &str, timeout: &LlmError) -> LlmError {
    use std::io::ErrorKind;
    let inner = e
        .get_ref()
        .and_then(|i| i.downcast_ref::<ureq::Error>())
        .map(|u| matches!(u, ureq::Error::Timeout(_)));
    if matches!(e.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock) || inner == Some(true) {
        return timeout.clone();
    }
    LlmError::Unreachable {
        url: url.to_string(),
        detail: e.to_string(),
    }
}
