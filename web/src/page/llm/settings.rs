//! The LLM settings: the endpoint (URL, protocol, model, key) and how prompts are made, kept in
//! this browser only: the settings in its local storage, the API key in this tab's session
//! storage unless the user asks to remember it on this device.

use serde::{Deserialize, Serialize};
use torchtraceap::llm::protocol::{Endpoint, Protocol};
use torchtraceap::llm::summary::{SummaryOptions, LOCAL_BUDGET};

/// Where the settings are kept, the API key left out (the browser's local storage of this
/// page's origin).
const STORAGE_KEY: &str = "torchtraceap.llm-settings.v1";
/// Where the API key is kept: the session storage of this tab by default (gone when the tab
/// closes), the local storage when the user chose "remember on this device".
const KEY_STORAGE_KEY: &str = "torchtraceap.llm-key.v1";

/// The endpoint and how prompts are made. Stored in this browser only: never in a share link,
/// a saved report or a request other than the one to the endpoint itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub endpoint: Endpoint,
    pub summary: SummaryOptions,
    /// Keep the API key in local storage (across sessions) rather than for this tab's session.
    #[serde(default)]
    pub remember_key: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            endpoint: Endpoint::new("http://127.0.0.1:8080", Protocol::OpenAi, "codellama"),
            summary: SummaryOptions::default(),
            remember_key: false,
        }
    }
}

impl Settings {
    /// The stored settings, or the defaults when none are stored or they cannot be read (a
    /// later format, or edited by hand).
    pub fn load() -> Settings {
        let mut settings = storage()
            .and_then(|s| s.get_item(STORAGE_KEY).ok().flatten())
            .map_or_else(Settings::default, |text| Settings::from_json(&text));
        let kept = key_storage(settings.remember_key)
            .and_then(|s| s.get_item(KEY_STORAGE_KEY).ok().flatten());
        // A key in the settings themselves (stored by an earlier version) stays for this
        // session only: saving moves it out of the local storage.
        settings.endpoint.api_key = kept.or(settings.endpoint.api_key.take());
        if settings.endpoint.api_key.is_some() && !settings.remember_key {
            let _ = settings.save();
        }
        settings
    }

    /// Whether this browser holds settings the user saved (or chose to forget): a local model
    /// server found when the page opens is used only where it holds none.
    pub fn stored() -> bool {
        storage().is_some_and(|s| s.get_item(STORAGE_KEY).ok().flatten().is_some())
    }

    /// The settings for `model` on the model server on this machine
    /// ([`Endpoint::local`]): requests within [`LOCAL_BUDGET`] tokens, which a small model on
    /// a laptop's CPU reads in seconds, not minutes.
    pub fn local(model: &str) -> Settings {
        Settings {
            endpoint: Endpoint::local(model),
            summary: SummaryOptions {
                budget: LOCAL_BUDGET,
                ..SummaryOptions::default()
            },
            remember_key: false,
        }
    }

    fn from_json(text: &str) -> Settings {
        serde_json::from_str(text).unwrap_or_default()
    }

    /// Stores the settings, and the API key where [`Settings::remember_key`] says (removed
    /// from the other storage); the error says why the browser refused (private mode, quota).
    pub(super) fn save(&self) -> Result<(), String> {
        let mut stored = self.clone();
        let key = stored.endpoint.api_key.take();
        let text = serde_json::to_string(&stored).expect("settings serialize");
        let refused = |e| format!("the browser refused to store them ({e:?})");
        storage()
            .ok_or_else(|| "this browser gives the page no local storage".to_string())?
            .set_item(STORAGE_KEY, &text)
            .map_err(refused)?;
        if let Some(other) = key_storage(!self.remember_key) {
            other.remove_item(KEY_STORAGE_KEY).map_err(refused)?;
        }
        let keys = key_storage(self.remember_key)
            .ok_or_else(|| "this browser gives the page no storage for the key".to_string())?;
        match key {
            Some(key) => keys.set_item(KEY_STORAGE_KEY, &key),
            None => keys.remove_item(KEY_STORAGE_KEY),
        }
        .map_err(refused)
    }

    /// Removes the settings and the key from both storages.
    pub(super) fn forget() {
        for s in [storage(), key_storage(false)].into_iter().flatten() {
            let _ = s.remove_item(STORAGE_KEY);
            let _ = s.remove_item(KEY_STORAGE_KEY);
        }
    }

    /// The options the worker builds prompts with: every flagged window (one request per
    /// click, so no cap is needed).
    pub fn options(&self) -> SummaryOptions {
        SummaryOptions {
            max_windows: usize::MAX,
            ..self.summary.clone()
        }
    }

    /// What the worker makes the questions with: the options, and the endpoint their request
    /// bodies are for, without its API key (the key never leaves the page).
    pub fn made_with(&self) -> MadeWith {
        MadeWith {
            options: self.options(),
            endpoint: Endpoint {
                api_key: None,
                ..self.endpoint.clone()
            },
        }
    }
}

/// The settings a file's questions were made with.
#[derive(Clone, Debug, PartialEq)]
pub struct MadeWith {
    pub options: SummaryOptions,
    pub endpoint: Endpoint,
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

/// Where the API key goes: the local storage when remembered, else this tab's session storage.
fn key_storage(remember: bool) -> Option<web_sys::Storage> {
    if remember {
        storage()
    } else {
        web_sys::window()?.session_storage().ok().flatten()
    }
}

/// This page's origin (`http://127.0.0.1:8080`): what a cross-origin endpoint must allow.
pub(super) fn page_origin() -> String {
    web_sys::window()
        .and_then(|w| w.location().origin().ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn settings_read_back_and_unreadable_ones_fall_back_to_the_defaults() {
        let mut s = Settings::default();
        s.endpoint.api_key = Some("k".into());
        s.summary.module_names = vec!["MyNet".into()];
        assert_eq!(Settings::from_json(&serde_json::to_string(&s).unwrap()), s);
        assert_eq!(
            Settings::from_json("{\"endpoint\": 3}"),
            Settings::default()
        );
        assert_eq!(Settings::from_json(""), Settings::default());
        assert_eq!(s.options().max_windows, usize::MAX);
        assert_eq!(s.options().budget, s.summary.budget);
    }
}
