//! The page's entry point (built by Trunk as the main binary).

fn main() {
    yew::Renderer::<torchtraceap_web::page::App>::new().render();
}
