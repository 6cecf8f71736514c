//! What the two binaries share: `ttap` (the user's commands, `src/main.rs`) and the developers'
//! `ttap-dev` (`dev-cli/`): writing to stdout, reading a trace file with a progress bar, the
//! LLM endpoint's protocol as an argument. Nothing here analyzes; the library does.

pub mod read;

/// Which API an LLM endpoint speaks (`--protocol`).
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProtocolArg {
    /// `/v1/chat/completions` (vLLM, TGI, llama.cpp's llama-server, Ollama's /v1).
    Openai,
    /// Ollama's native `/api/chat`.
    Ollama,
}

/// Writes to stdout. A closed pipe (`ttap analyze … | head`) ends the program quietly, as it
/// does for other Unix tools.
pub fn out(text: &str) {
    use std::io::Write;
    if let Err(e) = std::io::stdout().lock().write_all(text.as_bytes()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: writing to stdout: {e}");
        std::process::exit(2);
    }
}
