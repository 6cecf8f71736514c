//! Sets of substrings to look for in names, each compiled once.
//!
//! `str::contains` sets up a new searcher at every call: in the analysis, which asks the same
//! questions of millions of event names, that setup was a third of the time in WebAssembly
//! (natively a SIMD fast path hides it). A [`Patterns`] set compiles its searchers once
//! (`memchr::memmem`, vectorised on both targets) and is kept in a `static LazyLock`.

use memchr::memmem::Finder;

pub(crate) struct Patterns(Vec<Finder<'static>>);

impl Patterns {
    pub fn new(patterns: &[&'static str]) -> Patterns {
        Patterns(patterns.iter().map(|p| Finder::new(p.as_bytes())).collect())
    }

    /// Whether `haystack` contains any of the patterns.
    pub(crate) fn any_in(&self, haystack: &str) -> bool {
        self.0.iter().any(|f| f.find(haystack.as_bytes()).is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::Patterns;

    #[test]
    fn any_pattern_anywhere_matches() {
        let p = Patterns::new(&["nchwtonhwc", "__next__"]);
        assert!(p.any_in("void cudnn::nchwtonhwckernel<float>"));
        assert!(p.any_in("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"));
        assert!(!p.any_in("volta_sgemm_128x64_nn"));
        assert!(!p.any_in(""));
        assert!(!Patterns::new(&[]).any_in("anything"));
    }
}
