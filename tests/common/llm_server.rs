//! The LLM server the tests talk to (`scripts/llm-server.sh start` prints its variables), for
//! `cli/tests/llm_server.rs` and `dev-cli/tests/llm_server.rs`.

/// The running server's URL and key, or `None` (after printing why the test is skipped).
pub fn server(test: &str) -> Option<(String, String)> {
    match (std::env::var("TTAP_LLM_URL"), std::env::var("TTAP_LLM_KEY")) {
        (Ok(u), Ok(k)) if !u.is_empty() => Some((u, k)),
        _ => {
            let why = format!(
                "{test}: no LLM server (set TTAP_LLM_URL and TTAP_LLM_KEY, e.g. `eval \"$(scripts/llm-server.sh start)\"`)"
            );
            assert!(
                std::env::var_os("TTAP_REQUIRE_LLM_SERVER").is_none(),
                "TTAP_REQUIRE_LLM_SERVER is set and {why}"
            );
            println!("SKIPPED: {why}");
            None
        }
    }
}

/// Room for the schema's longest answer (its strings are capped in characters; the tiny
/// model's random text reaches the caps).
pub const SCHEMA_TOKENS: u32 = 2048;
