//! Retraining in the worker: the bundled base set fetched from the site once (the worker's
//! only request, to its own origin) and kept, the fit on it plus the user's kept labels
//! (`Session::retrain`, smartcore in wasm), and the reply. Nothing leaves the page.

use std::rc::Rc;

use js_sys::Uint8Array;
use torchtraceap::ml::base_set::BaseSet;
use torchtraceap::ml::labels::WindowLabel;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Response, WorkerGlobalScope};

use super::session::Session;
use crate::js;
use crate::protocol::{Reply, RetrainError, Retrained};

/// Where the site serves the base set (`www/models`, copied by `index.html`), relative to the
/// worker's script.
pub const BASE_SET_URL: &str = "models/base-set.bin.gz";

thread_local! {
    static BASE_SET: std::cell::RefCell<Option<Rc<BaseSet>>> = const { std::cell::RefCell::new(None) };
}

/// The base set, fetched and read on first use.
async fn base_set() -> Result<Rc<BaseSet>, RetrainError> {
    if let Some(base) = BASE_SET.with_borrow(Clone::clone) {
        return Ok(base);
    }
    let failed = |detail: String| RetrainError::Fetch {
        url: BASE_SET_URL.to_string(),
        detail,
    };
    let scope: WorkerGlobalScope = js_sys::global().unchecked_into();
    let response: Response = JsFuture::from(scope.fetch_with_str(BASE_SET_URL))
        .await
        .map_err(|e| failed(js::detail(&e)))?
        .unchecked_into();
    if !response.ok() {
        return Err(failed(format!("HTTP {}", response.status())));
    }
    let buffer = response
        .array_buffer()
        .map_err(|e| failed(js::detail(&e)))?;
    let bytes = JsFuture::from(buffer)
        .await
        .map_err(|e| failed(js::detail(&e)))?;
    let base =
        BaseSet::decode(&Uint8Array::new(&bytes).to_vec()).map_err(|e| RetrainError::BaseSet {
            url: BASE_SET_URL.to_string(),
            detail: e.to_string(),
        })?;
    let base = Rc::new(base);
    BASE_SET.with_borrow_mut(|b| *b = Some(Rc::clone(&base)));
    Ok(base)
}

/// The answer to `Request::Retrain`: `session` fitted on the base set and `labels`.
pub async fn retrain(
    session: &'static std::thread::LocalKey<std::cell::RefCell<Session>>,
    labels: Vec<WindowLabel>,
) -> Reply {
    let started = js_sys::Date::now();
    let result = match base_set().await {
        Ok(base) => {
            let base_ms = js_sys::Date::now() - started;
            session
                .with_borrow_mut(|s| s.retrain(&base, &labels))
                .map(|r| Retrained { base_ms, ..r })
        }
        Err(e) => Err(e),
    };
    Reply::Retrained(Box::new(result))
}
