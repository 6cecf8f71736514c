//! The user's own line of code behind an event, where the trace records Python frames
//! (`with_stack=True`): the innermost frame around the event that is neither a library's nor the
//! interpreter's (`train.py(57): main`, not `torch/utils/data/dataloader.py(631): __next__`), so
//! that a model asked about a finding can name the line to change.
//!
//! Kineto names a frame `file.py(line): function`, the file relative to where Python found it
//! (`torch/…`, `torchvision/…`, `typing.py`). A frame is the user's when its file is not under a
//! known library's folder nor a standard module's; an unknown library reads as the user's.

use crate::model::{EventKind, Trace, NONE};

/// Folders of libraries (as frames name them) whose frames are not the user's code.
const LIBRARY_FOLDERS: [&str; 22] = [
    "torch/",
    "torchvision/",
    "torchaudio/",
    "torchtext/",
    "transformers/",
    "timm/",
    "accelerate/",
    "lightning/",
    "pytorch_lightning/",
    "lightning_fabric/",
    "numpy/",
    "tqdm/",
    "apex/",
    "deepspeed/",
    "site-packages/",
    "dist-packages/",
    "multiprocessing/",
    "concurrent/",
    "importlib/",
    "logging/",
    "json/",
    "collections/",
];

/// Standard modules (single files) whose frames are not the user's code.
const STANDARD_FILES: [&str; 24] = [
    "typing.py",
    "enum.py",
    "os.py",
    "threading.py",
    "contextlib.py",
    "functools.py",
    "abc.py",
    "_collections_abc.py",
    "runpy.py",
    "selectors.py",
    "queue.py",
    "weakref.py",
    "copy.py",
    "random.py",
    "warnings.py",
    "socket.py",
    "posixpath.py",
    "genericpath.py",
    "codecs.py",
    "pickle.py",
    "traceback.py",
    "inspect.py",
    "linecache.py",
    "dataclasses.py",
];

/// The file and line of a Python frame's name (`train.py(57): main` → `("train.py", 57)`).
pub(super) fn frame(name: &str) -> Option<(&str, u32)> {
    let at = name.find(".py(")? + 3;
    let (file, rest) = name.split_at(at);
    let line = rest[1..].split_once("):")?.0.parse().ok()?;
    Some((file, line))
}

/// Whether a frame's file is the user's code.
fn users(file: &str) -> bool {
    let path = file.trim_start_matches("./");
    let base = path.rsplit('/').next().unwrap_or(path);
    !path.starts_with('<')
        && !LIBRARY_FOLDERS
            .iter()
            .any(|f| path.starts_with(f) || path.contains(&format!("/{f}")))
        && !STANDARD_FILES.contains(&base)
}

/// The innermost Python frame of the user's code around event `i` (its name), if the trace
/// records one.
pub(super) fn call_site(t: &Trace, i: usize) -> Option<&str> {
    let e = &t.events;
    let mut j = e.parent[i];
    while j != NONE {
        let at = j as usize;
        if e.kind[at] == EventKind::PythonFunction {
            let name = t.name_of(at);
            if frame(name).is_some_and(|(file, _)| users(file)) {
                return Some(name);
            }
        }
        j = e.parent[at];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_frames_are_told_from_the_libraries() {
        assert_eq!(frame("train.py(57): main"), Some(("train.py", 57)));
        assert_eq!(
            frame("torch/utils/data/dataloader.py(631): __next__"),
            Some(("torch/utils/data/dataloader.py", 631))
        );
        assert_eq!(frame("nn.Module: ResNet_0"), None);
        assert_eq!(frame("x.py(abc): f"), None);
        for user in [
            "train_single_gpu.py",
            "scripts/train.py",
            "./my_model/net.py",
        ] {
            assert!(users(user), "{user}");
        }
        for library in [
            "torch/utils/data/dataloader.py",
            "torchvision/models/resnet.py",
            "typing.py",
            "logging/__init__.py",
            "/usr/lib/python3.11/site-packages/timm/models/vit.py",
            "<built-in method run_backward>",
        ] {
            assert!(!users(library), "{library}");
        }
    }
}
