//! Redaction of what an LLM request would reveal: user-given names (modules, model, project),
//! file paths and host names become stable placeholders (`<name1>`, `<path1>`, `<host1>`).
//! `summary::summarize` applies it to every summary when `SummaryOptions::redact` is set.

use std::collections::BTreeMap;

/// What a placeholder hides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Hidden {
    Path,
    Host,
    Name,
}

/// Replaces sensitive names with stable placeholders: `<path1>`, `<host1>`, `<name1>`, numbered
/// in order of first appearance, the same name always getting the same placeholder.
#[derive(Clone, Debug, Default)]
pub(crate) struct Redactor {
    names: Vec<String>,
    /// Each original's number, by what it is.
    seen: BTreeMap<(Hidden, String), usize>,
    /// Placeholders handed out so far, by what they hide.
    counts: BTreeMap<Hidden, usize>,
}

impl Redactor {
    /// `names`: user-given names (modules, model, project) to hide wherever they appear.
    pub fn new(names: &[String]) -> Redactor {
        let mut names: Vec<String> = names.iter().filter(|n| !n.is_empty()).cloned().collect();
        // Longest first, so that a name containing another is replaced whole.
        names.sort_by(|x, y| y.len().cmp(&x.len()).then_with(|| x.cmp(y)));
        Redactor {
            names,
            ..Redactor::default()
        }
    }

    fn placeholder(&mut self, kind: Hidden, original: &str) -> String {
        let label = match kind {
            Hidden::Path => "path",
            Hidden::Host => "host",
            Hidden::Name => "name",
        };
        let key = (kind, original.to_string());
        let n = match self.seen.get(&key) {
            Some(&n) => n,
            None => {
                let c = self.counts.entry(kind).or_insert(0);
                *c += 1;
                self.seen.insert(key, *c);
                *c
            }
        };
        format!("<{label}{n}>")
    }

    /// `text` with user-given names, file paths and host names replaced.
    pub fn redact(&mut self, text: &str) -> String {
        let mut text = text.to_string();
        for k in 0..self.names.len() {
            let name = self.names[k].clone();
            if text.contains(&name) {
                let p = self.placeholder(Hidden::Name, &name);
                text = text.replace(&name, &p);
            }
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        while !rest.is_empty() {
            let start = rest.find(|c: char| !is_separator(c)).unwrap_or(rest.len());
            out.push_str(&rest[..start]);
            rest = &rest[start..];
            let end = rest.find(is_separator).unwrap_or(rest.len());
            let word = &rest[..end];
            let trimmed = word.trim_end_matches(['.', ',', ';', ':', ')']);
            let tail = &word[trimmed.len()..];
            if is_path(trimmed) {
                out.push_str(&self.placeholder(Hidden::Path, trimmed));
                out.push_str(tail);
            } else if is_host(trimmed) {
                out.push_str(&self.placeholder(Hidden::Host, trimmed));
                out.push_str(tail);
            } else {
                out.push_str(word);
            }
            rest = &rest[end..];
        }
        out
    }
}

fn is_separator(c: char) -> bool {
    c.is_whitespace() || matches!(c, '`' | '"' | '\'' | '(' | '[' | '<' | '>' | '=')
}

/// A Unix or Windows file path: `/a/b`, `./a`, `~/a`, `C:\a`, or a relative path to a source
/// file (`a/b.py`, `a/b.py:12`).
fn is_path(w: &str) -> bool {
    let b = w.as_bytes();
    let rooted = (w.starts_with('/') && w[1..].contains('/'))
        || w.starts_with("./")
        || w.starts_with("../")
        || w.starts_with("~/")
        || (b.len() > 3 && b[0].is_ascii_alphabetic() && &b[1..3] == b":\\");
    let source = w.contains('/')
        && [".py", ".cpp", ".cu", ".h", ".so", ".json", ".gz"]
            .iter()
            .any(|x| w.contains(x));
    rooted || source
}

/// Top-level and site-local domains that end a host name (Python dotted paths such as
/// `torch.nn.functional.relu` end otherwise).
const HOST_SUFFIXES: &[&str] = &[
    "com", "net", "org", "io", "ai", "dev", "edu", "gov", "cloud", "local", "lan", "internal",
    "corp", "home", "cluster",
];

/// A dotted host name ending in one of [`HOST_SUFFIXES`] (`node7.corp.example.com`,
/// `Annas-MacBook-Pro.local`), or an IPv4 address.
fn is_host(w: &str) -> bool {
    let labels: Vec<&str> = w.split('.').collect();
    let ip = labels.len() == 4
        && labels
            .iter()
            .all(|l| !l.is_empty() && l.len() <= 3 && l.bytes().all(|c| c.is_ascii_digit()));
    let dns = labels.len() >= 2
        && labels
            .iter()
            .all(|l| !l.is_empty() && l.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-'))
        && labels
            .last()
            .is_some_and(|l| HOST_SUFFIXES.contains(&l.to_ascii_lowercase().as_str()));
    ip || dns
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_is_stable_and_complete() {
        let mut r = Redactor::new(&["MySecretNet".to_string(), "Secret".to_string()]);
        let a = r.redact(
            "nn.Module: MySecretNet at /home/ann/proj/train.py:12 on node7.corp.example.com",
        );
        assert_eq!(a, "nn.Module: <name1> at <path1> on <host1>");
        let b = r.redact("Secret in models/net.py, again /home/ann/proj/train.py:12 (node7.corp.example.com) and 10.0.0.7.");
        assert_eq!(
            b,
            "<name2> in <path2>, again <path1> (<host1>) and <host2>."
        );
        // Ordinary words, versions, kernel names and numbers stay.
        let keep =
            "aten::conv2d 1.234 ms, torch 2.1.0, void at::native::vectorized_elementwise_kernel<4>";
        assert_eq!(Redactor::new(&[]).redact(keep), keep);
    }
}
