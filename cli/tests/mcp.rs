//! `ttap mcp` driven as an MCP client drives it: the built binary as a child process, JSON-RPC
//! lines on its stdin and stdout (initialize, tools/list, tools/call). Each tool answers on a
//! shared real trace; the window summary is the text the LLM request carries; a path outside the
//! roots (a symlink's target included) is refused naming the roots; a missing file, a non-trace
//! and a folder are tool errors after which the server goes on; answers stay within their bound;
//! the server exits cleanly when the client closes its stdin.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{json, Value};
use torchtraceap::files::{read_on, threads_for};
use torchtraceap::llm::summary::{self, SummaryOptions};
use torchtraceap::{AnalyzedTrace, IngestOptions};

/// The answers' bound the tools state (`cli/src/mcp/answer.rs`).
const MAX_ANSWER_BYTES: usize = 16 * 1024;

const HTA: &str = "facebookresearch__HolisticTraceAnalysis";
const CONTROL: &str = "tests__data__trace_diff__control__control.json.gz";
const TEST: &str = "tests__data__trace_diff__test__test.json.gz";

/// A scripted MCP client over the server's stdio.
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Client {
    /// `ttap mcp --root ROOT…`, initialized.
    fn start(roots: &[&Path]) -> Client {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ttap"));
        cmd.arg("mcp");
        for r in roots {
            cmd.arg("--root").arg(r);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("ttap mcp starts");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut c = Client {
            child,
            stdin,
            stdout,
            next_id: 0,
        };
        let init = c.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": { "name": "ttap-tests", "version": "0" }
            }),
        );
        assert_eq!(init["serverInfo"]["name"], "ttap", "{init}");
        assert!(init["capabilities"]["tools"].is_object(), "{init}");
        c.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        c
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("open");
        writeln!(stdin, "{message}").expect("the server reads its stdin");
        stdin.flush().expect("flushed");
    }

    /// The result of one request (notifications in between skipped).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).expect("readable");
            assert!(
                n > 0,
                "the server closed its stdout before answering {method}"
            );
            let reply: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("not a JSON-RPC line ({e}): {line}"));
            if reply["id"] == json!(id) {
                assert!(reply["error"].is_null(), "{method}: {reply}");
                return reply["result"].clone();
            }
        }
    }

    /// A tool's answer: whether it is a tool error, and its text.
    fn call(&mut self, tool: &str, arguments: Value) -> (bool, String) {
        let result = self.request(
            "tools/call",
            json!({ "name": tool, "arguments": arguments }),
        );
        let content = result["content"].as_array().expect("content");
        assert_eq!(content.len(), 1, "{result}");
        assert_eq!(content[0]["type"], "text", "{result}");
        (
            result["isError"] == json!(true),
            content[0]["text"].as_str().expect("text").to_string(),
        )
    }

    /// A tool's answer that must not be an error, within the bound.
    fn answer(&mut self, tool: &str, arguments: Value) -> String {
        let (error, text) = self.call(tool, arguments);
        assert!(!error, "{tool}: {text}");
        assert!(
            text.len() <= MAX_ANSWER_BYTES,
            "{tool}: {} bytes, more than the bound",
            text.len()
        );
        text
    }

    /// Closes stdin: the server must exit cleanly.
    fn close(mut self) {
        drop(self.stdin.take());
        let status = self.child.wait().expect("waited");
        assert!(status.success(), "ttap mcp exited with {status}");
    }
}

/// A fresh folder under the system's temporary folder (its path canonical, as the server
/// compares them), removed when dropped.
fn temp(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("ttap-mcp-{name}-"))
        .tempdir_in(std::env::temp_dir().canonicalize().unwrap())
        .unwrap()
}

/// What the LLM request about `key` carries (`ttap explain --dry-run`'s user message).
fn request_text(path: &Path, key: &str, budget: usize) -> String {
    let ingested = read_on(path, IngestOptions::default(), threads_for(path, 1), |_| {}).unwrap();
    let opts = SummaryOptions {
        budget,
        max_windows: usize::MAX,
        ..SummaryOptions::default()
    };
    let all = AnalyzedTrace::new(&ingested).window_summaries(&opts);
    let s = all.iter().find(|s| s.key == key).expect("the window");
    summary::prompt(s, budget).user
}

#[test]
fn each_tool_answers_on_a_shared_trace() {
    let Some(shared) = common::shared_traces("the MCP tools on a real trace") else {
        return;
    };
    let files = common::trace_files(&shared);
    let find = |name: &str| {
        files
            .iter()
            .find(|f| f.ends_with(Path::new(HTA).join(name)))
            .unwrap_or_else(|| panic!("{HTA}/{name} is missing from the shared traces"))
            .clone()
    };
    let (control, test) = (find(CONTROL), find(TEST));
    let mut c = Client::start(&[&shared]);
    let tools = c.request("tools/list", json!({}));
    let mut names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            assert!(
                t["description"].as_str().is_some_and(|d| d.len() > 40),
                "{t}"
            );
            assert_eq!(t["inputSchema"]["type"], "object", "{t}");
            t["name"].as_str().unwrap()
        })
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "analyze_trace",
            "compare_traces",
            "find_events",
            "list_findings",
            "top_kernels",
            "window_summary"
        ]
    );
    let path = control.to_str().unwrap();

    let analyzed: Value =
        serde_json::from_str(&c.answer("analyze_trace", json!({ "path": path }))).expect("JSON");
    assert_eq!(analyzed["steps"]["steady"], 6, "{analyzed}");
    assert_eq!(analyzed["devices"], json!(["8 × NVIDIA A100-PG509-200"]));
    let ids: Vec<&str> = analyzed["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"communication-exposed") && ids.contains(&"host-device-sync"),
        "{ids:?}"
    );
    assert!(analyzed["findings"][0]["ms_per_step"].as_f64().unwrap() > 1.0);

    let findings: Value = serde_json::from_str(&c.answer(
        "list_findings",
        json!({ "path": path, "finding": "host-device-sync" }),
    ))
    .unwrap();
    let f = &findings["findings"][0];
    assert_eq!(findings["findings"].as_array().unwrap().len(), 1);
    assert_eq!(f["severity"], "low");
    // The synchronizing calls: a stream sync, or a copy into pageable memory, which blocks the
    // host as one (issue 41).
    let first = f["evidence"][0]["events"][0].as_str().unwrap();
    assert!(
        ["cudaStreamSynchronize", "cudaMemcpyAsync"]
            .iter()
            .any(|call| first.starts_with(call)),
        "{first}"
    );
    assert!(
        f["fix_snippet"].as_str().unwrap().contains(".item()"),
        "{f}"
    );
    assert_eq!(f["window_key"], "finding:host-device-sync");
    let (error, text) = c.call(
        "list_findings",
        json!({ "path": path, "finding": "no-such-rule" }),
    );
    assert!(error && text.contains("communication-exposed"), "{text}");

    for budget in [800, 3072] {
        let summary = c.answer(
            "window_summary",
            json!({ "path": path, "key": "host-device-sync", "budget": budget }),
        );
        assert!(
            summary.contains(&request_text(&control, "finding:host-device-sync", budget)),
            "{summary}"
        );
    }

    let compared = c.answer(
        "compare_traces",
        json!({ "before": path, "after": test.to_str().unwrap(), "top": 5 }),
    );
    assert!(
        compared.starts_with("Verdict: step time +60.1 %"),
        "{compared}"
    );

    let events: Value = serde_json::from_str(&c.answer(
        "find_events",
        json!({ "path": path, "name": "NCCL", "limit": 3 }),
    ))
    .unwrap();
    let listed = events["events"].as_array().unwrap();
    assert_eq!(listed.len(), 3);
    assert_eq!(
        events["matched"].as_u64().unwrap(),
        3 + events["events_left_out"].as_u64().unwrap()
    );
    assert!(listed
        .iter()
        .all(|e| e["name"].as_str().unwrap().to_lowercase().contains("nccl")));
    let starts: Vec<f64> = listed
        .iter()
        .map(|e| e["start_ms"].as_f64().unwrap())
        .collect();
    assert!(starts.windows(2).all(|w| w[0] <= w[1]), "{starts:?}");
    let ranged: Value = serde_json::from_str(&c.answer(
        "find_events",
        json!({ "path": path, "start_ms": 100.0, "end_ms": 100.5, "limit": 1000 }),
    ))
    .unwrap();
    assert!(ranged["events"].as_array().unwrap().len() <= 100);
    assert!(ranged["events"].as_array().unwrap().iter().all(|e| {
        let (s, d) = (
            e["start_ms"].as_f64().unwrap(),
            e["dur_ms"].as_f64().unwrap(),
        );
        s <= 100.5 && s + d >= 100.0 - 1e-3
    }));

    let kernels: Value =
        serde_json::from_str(&c.answer("top_kernels", json!({ "path": path, "limit": 2 })))
            .unwrap();
    assert_eq!(kernels["kernels"].as_array().unwrap().len(), 2);
    assert_eq!(kernels["kernels_left_out"], 8);
    assert_eq!(kernels["kernels"][0]["op"], "aten::addmm");
    c.close();
}

#[test]
fn a_path_outside_the_roots_is_refused_symlinks_included() {
    let scratch = temp("roots");
    let dir = scratch.path();
    let (root, outside) = (dir.join("root"), dir.join("outside"));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    let secret = outside.join("trace.json");
    std::fs::write(&secret, b"{\"traceEvents\": []}").unwrap();
    std::os::unix::fs::symlink(&secret, root.join("link.json")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("linked-folder")).unwrap();
    std::fs::create_dir_all(root.join("runs")).unwrap();
    std::fs::write(root.join("runs/inside.json"), b"{\"traceEvents\": []}").unwrap();
    std::os::unix::fs::symlink(&secret, root.join("runs/link.json")).unwrap();
    let mut c = Client::start(&[&root]);
    for path in [
        secret.display().to_string(),
        root.join("link.json").display().to_string(),
        root.join("linked-folder/trace.json").display().to_string(),
        "../outside/trace.json".to_string(),
        "/etc/hostname".to_string(),
    ] {
        let (error, text) = c.call("analyze_trace", json!({ "path": path }));
        assert!(error, "{path}: {text}");
        assert!(text.contains("refused"), "{path}: {text}");
        assert!(text.contains(&root.display().to_string()), "{text}");
    }
    let (error, text) = c.call(
        "compare_traces",
        json!({ "before": root.join("link.json"), "after": root.join("link.json") }),
    );
    assert!(error && text.contains("refused"), "{text}");
    let (error, text) = c.call(
        "compare_traces",
        json!({ "before": "runs", "after": "runs" }),
    );
    assert!(error && text.contains("refused"), "{text}");
    c.close();
}

#[test]
fn a_missing_file_or_a_non_trace_is_a_tool_error_and_the_server_goes_on() {
    let scratch = temp("errors");
    let root = scratch.path();
    std::fs::write(root.join("notes.json"), b"{\"a\": 1}").unwrap();
    std::fs::create_dir_all(root.join("folder")).unwrap();
    let mut c = Client::start(&[root]);
    for (path, says) in [
        ("missing.json", "cannot be opened"),
        ("notes.json", "is it a PyTorch profiler trace"),
        ("folder", "a folder"),
    ] {
        let (error, text) = c.call("list_findings", json!({ "path": path }));
        assert!(error, "{path}: {text}");
        assert!(
            text.contains(&root.join(path).display().to_string()),
            "{text}"
        );
        assert!(text.contains(says), "{path}: {text}");
    }
    let (error, text) = c.call("find_events", json!({ "path": "missing.json" }));
    assert!(error && text.contains("needs a name substring"), "{text}");
    let (error, text) = c.call(
        "compare_traces",
        json!({ "before": "notes.json", "after": "notes.json" }),
    );
    assert!(error && text.contains("notes.json"), "{text}");
    assert!(!c.request("tools/list", json!({}))["tools"]
        .as_array()
        .unwrap()
        .is_empty());
    c.close();
}

#[test]
fn an_answer_stays_within_its_bound_and_says_what_it_left_out() {
    let scratch = temp("bound");
    let root = scratch.path();
    let events: Vec<Value> = (0..300)
        .map(|i| {
            json!({ "ph": "X", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 1000 + i * 10, "dur": 5,
                    "name": format!("aten::op_{}{i}", "x".repeat(400)) })
        })
        .collect();
    std::fs::write(
        root.join("long.json"),
        json!({ "schemaVersion": 1, "traceEvents": events }).to_string(),
    )
    .unwrap();
    let mut c = Client::start(&[root]);
    let text = c.answer(
        "find_events",
        json!({ "path": "long.json", "name": "aten::op", "limit": 100 }),
    );
    let answer: Value = serde_json::from_str(&text).expect("still JSON when cut");
    let listed = answer["events"].as_array().unwrap();
    assert_eq!(answer["matched"], 300);
    assert!(!listed.is_empty() && listed.len() < 100, "{}", listed.len());
    assert_eq!(
        answer["events_left_out"].as_u64().unwrap() as usize,
        300 - listed.len()
    );
    assert!(listed
        .iter()
        .all(|e| e["name"].as_str().unwrap().chars().count() <= 161));
    c.close();
}
