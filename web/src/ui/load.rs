//! Getting traces into the page: a drop zone over the whole page, a file picker, the sample.

use web_sys::{DragEvent, File, FileList, FilePropertyBag, HtmlInputElement};
use yew::prelude::*;

fn files_of(list: Option<FileList>) -> Vec<File> {
    list.map(|l| (0..l.length()).filter_map(|i| l.get(i)).collect())
        .unwrap_or_default()
}

#[derive(Properties, PartialEq)]
pub struct DropZoneProps {
    pub on_files: Callback<Vec<File>>,
    pub loads_ended: u32,
    pub children: Html,
}

/// The whole page accepts dropped files; it is outlined while files are dragged over it.
#[function_component(DropZone)]
pub fn drop_zone(props: &DropZoneProps) -> Html {
    let over = use_state(|| false);
    let ondragover = {
        let over = over.clone();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            over.set(true);
        })
    };
    let ondragleave = {
        let over = over.clone();
        Callback::from(move |_: DragEvent| over.set(false))
    };
    let ondrop = {
        let over = over.clone();
        let on_files = props.on_files.clone();
        Callback::from(move |e: DragEvent| {
            e.prevent_default();
            over.set(false);
            on_files.emit(files_of(e.data_transfer().and_then(|d| d.files())));
        })
    };
    html! {
        <main class={classes!("page", (*over).then_some("dragging"))} data-loads={props.loads_ended.to_string()}
              {ondragover} {ondragleave} {ondrop}>
            { props.children.clone() }
        </main>
    }
}

#[derive(Properties, PartialEq)]
pub struct PickerProps {
    pub on_files: Callback<Vec<File>>,
    pub on_sample: Callback<()>,
    pub busy: bool,
}

#[function_component(Picker)]
pub fn picker(props: &PickerProps) -> Html {
    let onchange = {
        let on_files = props.on_files.clone();
        Callback::from(move |e: Event| {
            let input: HtmlInputElement = e.target_unchecked_into();
            let files = files_of(input.files());
            // Let the same file be chosen again later.
            input.set_value("");
            on_files.emit(files);
        })
    };
    let on_sample = props.on_sample.reform(|_: MouseEvent| ());
    html! {
        <div class="picker">
            <label class="button primary">
                {"Open traces…"}
                <input type="file" id="file-input" multiple=true accept=".json,.gz,application/json,application/gzip"
                    {onchange} />
            </label>
            <button class="button" id="sample" onclick={on_sample} disabled={props.busy}>{"Try the sample trace"}</button>
        </div>
    }
}

pub fn welcome() -> Html {
    html! {
        <section class="welcome">
            <h2>{"Drop PyTorch profiler traces here"}</h2>
            <p>
                {"TorchTraceAP reads the Chrome-trace JSON that "}<code>{"torch.profiler"}</code>
                {" writes ("}<code>{"*.pt.trace.json"}</code>{", plain or "}<code>{".json.gz"}</code>
                {"), finds performance anti-patterns (input pipeline stalls, host-device syncs, \
                  launch overhead, missing tensor cores, exposed communication, …) and shows what \
                  each one costs per step and the code to change."}
            </p>
            <p>{"Several files at once are read as the ranks of one run. The trace stays on your \
                 machine: it is read by this page, in a background worker, and never sent anywhere."}</p>
        </section>
    }
}

/// Fetches the bundled sample (a file of this site) as a `File`, as if the user had chosen it.
pub async fn fetch_sample(url: &str) -> Result<File, String> {
    let failed = |what: &str| {
        format!("Could not load the sample trace ({url}): {what}. Reload the page, or open a trace of your own.")
    };
    let response = gloo_net::http::Request::get(url)
        .send()
        .await
        .map_err(|e| failed(&e.to_string()))?;
    if !response.ok() {
        return Err(failed(&format!(
            "the server answered {}",
            response.status()
        )));
    }
    let bytes = response
        .binary()
        .await
        .map_err(|e| failed(&e.to_string()))?;
    let parts: js_sys::Array =
        std::iter::once(js_sys::Uint8Array::from(bytes.as_slice())).collect();
    let name = url.rsplit('/').next().unwrap_or(url);
    let options = FilePropertyBag::new();
    options.set_type("application/gzip");
    File::new_with_blob_sequence_and_options(&parts, name, &options)
        .map_err(|e| failed(&format!("{e:?}")))
}
