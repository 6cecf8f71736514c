//! Interned strings: each distinct name is stored once and referred to by a `StrId`.

use rustc_hash::FxHashMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Index of an interned string in [`Strings`].
pub type StrId = u32;

/// Serialized as the list of strings in id order; the lookup is rebuilt when read.
#[derive(Debug, Default)]
pub struct Strings {
    ids: FxHashMap<Box<str>, StrId>,
    list: Vec<Box<str>>,
}

impl Strings {
    /// Returns the id of `s`, adding it if it is new.
    pub(crate) fn intern(&mut self, s: &str) -> StrId {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = StrId::try_from(self.list.len()).expect("fewer than 2^32 distinct strings");
        self.list.push(s.into());
        self.ids.insert(s.into(), id);
        id
    }

    /// The id of `s` if it was interned.
    pub fn find(&self, s: &str) -> Option<StrId> {
        self.ids.get(s).copied()
    }

    pub fn get(&self, id: StrId) -> &str {
        &self.list[id as usize]
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Every string, in id order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.list.iter().map(|s| &**s)
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

impl Serialize for Strings {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.list.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Strings {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Strings, D::Error> {
        let list = Vec::<Box<str>>::deserialize(deserializer)?;
        // Interned one by one, as they were: the lookup ends up laid out as the writer's was.
        let mut strings = Strings::default();
        for s in &list {
            strings.intern(s);
        }
        if strings.len() != list.len() {
            return Err(serde::de::Error::custom("a string is listed twice"));
        }
        Ok(strings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_text_gets_the_same_id() {
        let mut s = Strings::default();
        let a = s.intern("aten::conv2d");
        let b = s.intern("aten::relu");
        assert_ne!(a, b);
        assert_eq!(s.intern("aten::conv2d"), a);
        assert_eq!(s.get(b), "aten::relu");
        assert_eq!(s.find("aten::relu"), Some(b));
        assert_eq!(s.find("aten::mm"), None);
        assert_eq!(s.len(), 2);
    }
}
