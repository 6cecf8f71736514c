//! `ttap-dev llm-eval` against a real OpenAI-compatible server: llama.cpp's llama-server with a
//! tiny random-weight model, started by `scripts/llm-server.sh start` (which prints the
//! variables). Without `TTAP_LLM_URL` and `TTAP_LLM_KEY` the test prints `SKIPPED:` and passes,
//! or fails where `TTAP_REQUIRE_LLM_SERVER` is set (CI). It asserts the table's shape, never the
//! tiny model's content.

use std::process::Command;

#[path = "../../tests/common/llm_server.rs"]
mod llm_server;
use llm_server::{server, SCHEMA_TOKENS};

#[test]
fn ttap_llm_eval_end_to_end() {
    let Some((url, key)) = server("ttap_llm_eval_end_to_end") else {
        return;
    };
    let ttap_dev = env!("CARGO_BIN_EXE_ttap-dev");
    let out = Command::new(ttap_dev)
        .args(["llm-eval", "generated", "--limit", "2", "--endpoint", &url])
        .args(["--model", "codellama-test", "--model", "codellama-test"])
        .args(["--max-tokens", &SCHEMA_TOKENS.to_string()])
        .env("TTAP_LLM_API_KEY", &key)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    println!("{stdout}");
    assert!(
        stdout.starts_with("2 labelled windows (2 generated, 0 real), 0 skipped"),
        "{stdout}"
    );
    assert!(stdout.contains("| model | windows | answered | right anti-pattern |"));
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("| codellama-test |"))
        .collect();
    assert_eq!(rows.len(), 2, "one row per --model: {stdout}");
    let header: Vec<&str> = stdout
        .lines()
        .find(|l| l.starts_with("| model |"))
        .unwrap()
        .split('|')
        .map(str::trim)
        .collect();
    let column = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("no column {name:?}: {header:?}"))
    };
    for r in rows {
        // Every request answered, every answer the schema's object; the rest is the tiny
        // model's noise, not a target.
        assert!(r.starts_with("| codellama-test | 2 | 2/2 (100%) |"), "{r}");
        let cells: Vec<&str> = r.split('|').map(str::trim).collect();
        assert_eq!(
            cells[column("valid structured answers")],
            "2/2 (100%)",
            "valid structured answers: {r}"
        );
        assert!(
            cells[column("latency median / p90")].contains(" / ")
                && cells[column("first token (median)")].ends_with(" s"),
            "{r}"
        );
    }
    assert!(
        stderr.contains("generated:dataloader-bottleneck"),
        "{stderr}"
    );
    let refused = Command::new(ttap_dev)
        .args(["llm-eval", "generated", "--limit", "1", "--endpoint", &url])
        .args(["--model", "codellama-test", "--api-key", "wrong"])
        .env_remove("TTAP_LLM_API_KEY")
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("refused the API key"));
}
