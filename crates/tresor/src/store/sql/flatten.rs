//! A row of a table bound to a statement (`table.rs`), serialised as the
//! flat list of its values: a tuple, array or tuple struct of numbers,
//! texts and options, anything else refused.

use super::Arg;
use serde::Serialize;
use serde::ser::{self, Impossible};
use std::fmt;

/// What a row that is not a tuple of numbers, texts and NULLs fails with.
#[derive(Debug)]
pub(super) struct NotFlat(String);

impl fmt::Display for NotFlat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotFlat {}

impl ser::Error for NotFlat {
    fn custom<M: fmt::Display>(message: M) -> Self {
        NotFlat(message.to_string())
    }
}

/// Serialises a row (a tuple, array or tuple struct of numbers, texts and
/// options) as the flat list of its values.
pub(super) struct Flatten<'v>(pub(super) &'v mut Vec<Arg>);

macro_rules! ints {
    ($($method:ident: $ty:ty),*) => {
        $(fn $method(self, value: $ty) -> Result<(), NotFlat> {
            let value = i64::try_from(value).map_err(|_| NotFlat("out of range".into()))?;
            self.0.push(Arg::Int(value));
            Ok(())
        })*
    };
}

macro_rules! refused {
    ($($method:ident($($ty:ty),*)),*) => {
        $(fn $method(self, $(_: $ty),*) -> Result<(), NotFlat> {
            Err(NotFlat(concat!("not a table's value: ", stringify!($method)).into()))
        })*
    };
}

impl<'v> ser::Serializer for Flatten<'v> {
    type Ok = ();
    type Error = NotFlat;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Impossible<(), NotFlat>;
    type SerializeMap = Impossible<(), NotFlat>;
    type SerializeStruct = Impossible<(), NotFlat>;
    type SerializeStructVariant = Impossible<(), NotFlat>;

    ints!(serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64,
          serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64);
    refused!(
        serialize_bool(bool),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_bytes(&[u8]),
        serialize_unit_struct(&'static str)
    );

    fn serialize_str(self, value: &str) -> Result<(), NotFlat> {
        self.0.push(Arg::Text(value.to_owned()));
        Ok(())
    }

    fn serialize_none(self) -> Result<(), NotFlat> {
        self.0.push(Arg::NullInt);
        Ok(())
    }

    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<(), NotFlat> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), NotFlat> {
        self.serialize_none()
    }

    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
    ) -> Result<(), NotFlat> {
        Err(ser::Error::custom("not a table's value: an enum"))
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), NotFlat> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), NotFlat> {
        Err(ser::Error::custom("not a table's value: an enum"))
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self, NotFlat> {
        Ok(self)
    }

    fn serialize_tuple(self, _: usize) -> Result<Self, NotFlat> {
        Ok(self)
    }

    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self, NotFlat> {
        Ok(self)
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, NotFlat> {
        Err(ser::Error::custom("not a table's value: an enum"))
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, NotFlat> {
        Err(ser::Error::custom("not a table's value: a map"))
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, NotFlat> {
        Err(ser::Error::custom("not a table's value: a struct"))
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, NotFlat> {
        Err(ser::Error::custom("not a table's value: an enum"))
    }
}

macro_rules! elements {
    ($($trait:ident: $method:ident),*) => {
        $(impl ser::$trait for Flatten<'_> {
            type Ok = ();
            type Error = NotFlat;
            fn $method<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), NotFlat> {
                value.serialize(Flatten(self.0))
            }
            fn end(self) -> Result<(), NotFlat> {
                Ok(())
            }
        })*
    };
}

elements!(SerializeSeq: serialize_element, SerializeTuple: serialize_element,
          SerializeTupleStruct: serialize_field);
