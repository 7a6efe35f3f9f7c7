//! The fields a push is read for, picked out of the payload as it is parsed: what no field
//! here names is skipped without being built, where a `serde_json::Value` made a map for every
//! object of the payload (a GitHub push carries a hundred fields of repository and sender)
//! and the service then read five of them.
//!
//! Every type here takes any JSON and keeps what has the expected shape, as the rule of
//! `payload.rs` says: a field of the wrong type is as good as absent, and whether that makes
//! the push malformed is the caller's to say. An object's key named twice keeps its last
//! value, as a `Value` does.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// A string where the payload has one; `None` for anything else.
#[derive(Debug, Default)]
pub(super) struct Text(pub(super) Option<String>);

/// An object read as `T`; `None` for anything else.
#[derive(Debug)]
pub(super) struct Object<T>(pub(super) Option<T>);

impl<T> Default for Object<T> {
    fn default() -> Self {
        Self(None)
    }
}

/// An array: absent or null is `Absent`, anything but an array `Other`.
#[derive(Debug, Default)]
pub(super) enum List<T> {
    #[default]
    Absent,
    Items(Vec<T>),
    Other,
}

/// An object's key, borrowed from the payload unless it holds an escape.
pub(super) struct Key<'de>(pub(super) Cow<'de, str>);

/// The arms of a visitor that takes any JSON value: `expecting`, and every kind of value the
/// caller does not take, each `missed`. Numbers and booleans are always missed; the kinds
/// named after the `;` (`unit` for null, `str`, `seq`, `map`) are too, skipped without being
/// built. The visitor writes the arms of the kinds it takes.
macro_rules! skip_the_rest {
    ($missed:expr; $($kind:ident),*) => {
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($missed)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($missed)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($missed)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($missed)
        }
        $(skip_the_rest!(@$kind $missed);)*
    };
    (@unit $missed:expr) => {
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($missed)
        }
    };
    (@str $missed:expr) => {
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok($missed)
        }
    };
    (@seq $missed:expr) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok($missed)
        }
    };
    (@map $missed:expr) => {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok($missed)
        }
    };
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text;
            fn visit_str<E: de::Error>(self, text: &str) -> Result<Text, E> {
                Ok(Text(Some(text.to_owned())))
            }
            skip_the_rest!(Text(None); unit, seq, map);
        }
        deserializer.deserialize_any(V)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Object<T>;
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Object<T>, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(|t| Object(Some(t)))
            }
            skip_the_rest!(Object(None); unit, str, seq);
        }
        deserializer.deserialize_any(V(PhantomData))
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = List<T>;
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<List<T>, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(List::Items(items))
            }
            fn visit_unit<E: de::Error>(self) -> Result<List<T>, E> {
                Ok(List::Absent)
            }
            skip_the_rest!(List::Other; str, map);
        }
        deserializer.deserialize_any(V(PhantomData))
    }
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object's key")
            }
            fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(key)))
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(key.to_owned())))
            }
        }
        deserializer.deserialize_str(V)
    }
}

/// A struct of lenient fields, each read from the key named beside it; other keys are
/// skipped, and a key named twice keeps its last value. Read through [`Object`], which
/// hands it only objects.
macro_rules! fields {
    ($(#[$doc:meta])* struct $name:ident { $($field:ident: $ty:ty = $key:literal,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Default)]
        struct $name {
            $($field: $ty,)*
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> serde::de::Visitor<'de> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str("an object")
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(
                        self,
                        mut map: A,
                    ) -> Result<$name, A::Error> {
                        let mut read = $name::default();
                        while let Some(key) = map.next_key::<$crate::payload::lenient::Key>()? {
                            match &*key.0 {
                                $($key => read.$field = map.next_value()?,)*
                                _ => {
                                    map.next_value::<serde::de::IgnoredAny>()?;
                                }
                            }
                        }
                        Ok(read)
                    }
                }
                deserializer.deserialize_map(V)
            }
        }
    };
}
pub(super) use fields;
