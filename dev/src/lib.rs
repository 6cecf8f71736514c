//! TorchTraceAP's development tools, over the library (`torchtraceap`): what makes and judges
//! the analysis, not what analyzes. Used by the developers' binary `ttap-dev` (`dev-cli/`:
//! `synth`, `realism`, `train`, `eval`, `llm-eval`) and by the tests; never by the user's `ttap`,
//! the web app's code nor the Python package (`tests/layers.rs` checks).
//!
//! - [`synth`]: the labelled trace generator (writes Kineto JSON; also in wasm32, for the web
//!   app's tests);
//! - [`realism`]: statistics comparing generated traces with real ones;
//! - [`ml`] (native): the window model's training recipe ([`ml::train`]), its evaluation on
//!   generated scenarios ([`ml::eval`]) and on the labelled real traces ([`ml::real`]);
//! - [`llm`] (native): the graded evaluation of LLM endpoints ([`llm::eval`]).

pub mod realism;
pub mod synth;

#[cfg(not(target_arch = "wasm32"))]
pub mod ml {
    //! The window model (`torchtraceap::ml`) trained and judged.
    pub mod eval;
    pub mod real;
    pub mod train;
}

#[cfg(not(target_arch = "wasm32"))]
pub mod llm {
    //! LLM endpoints (`torchtraceap::llm`) graded.
    pub mod eval;
}
