//! The analysis worker's entry point (built by Trunk as a `data-type="worker"` binary).

fn main() {
    torchtraceap_web::worker::start();
}
