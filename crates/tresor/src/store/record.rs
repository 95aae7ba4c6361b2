//! Structs read from a row column by column, each field named once.
//!
//! sqlx's `FromRow` derive is not used on purpose (its `macros` feature
//! compiles sqlx and both drivers a second time); [`record!`] declares the
//! struct and implements [`sql::FromRow`](super::sql::FromRow) for it, so
//! that `sql::query_as::<T>(…)` reads rows of `T` by their columns' names.
//!
//! A field reads the column of its own name, or the one written after `=`
//! (`pub transfer_id: i64 = "id"`), or what the closure written after `=>`
//! makes of the row (`pub closing: bool => |row| row.try_get::<i64, _>("closing")? == 1`).
//! A struct declared elsewhere (a model type, which names no store) is
//! read by `record! { impl for Name { field, other = "column", … } }`, and
//! one that sqlx reads itself (the trail's, on the pool) by
//! `record! { impl sqlx for Name { … } }`, which implements sqlx's own
//! `FromRow` trait (a trait, not the derive).

/// Declares a struct read from a row by its columns' names; see the module.
macro_rules! record {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[$field_meta:meta])*
                $field_vis:vis $field:ident : $ty:ty
                $(= $column:literal)?
                $(=> |$row:ident| $read:expr)?
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $(
                $(#[$field_meta])*
                $field_vis $field: $ty,
            )*
        }

        $crate::store::record::record! {
            impl for $name {
                $($field $(= $column)? $(=> |$row| $read)?),*
            }
        }
    };
    (
        impl for $name:ident {
            $(
                $field:ident
                $(= $column:literal)?
                $(=> |$row:ident| $read:expr)?
            ),* $(,)?
        }
    ) => {
        impl $crate::store::sql::FromRow for $name {
            fn from_row(
                row: &$crate::store::sql::Row,
            ) -> Result<Self, $crate::error::Error> {
                $crate::store::record::record!(@fields row, $crate::store::sql::Row::try_get, {
                    $($field $(= $column)? $(=> |$row| $read)?),*
                })
            }
        }
    };
    (
        impl sqlx for $name:ident {
            $($field:ident $(= $column:literal)?),* $(,)?
        }
    ) => {
        impl ::sqlx::FromRow<'_, ::sqlx::any::AnyRow> for $name {
            fn from_row(row: &::sqlx::any::AnyRow) -> Result<Self, ::sqlx::Error> {
                $crate::store::record::record!(@fields row, ::sqlx::Row::try_get, {
                    $($field $(= $column)?),*
                })
            }
        }
    };
    (
        @fields $source:ident, $get:path, {
            $($field:ident $(= $column:literal)? $(=> |$row:ident| $read:expr)?),*
        }
    ) => {
        Ok(Self {
            $(
                $field: $crate::store::record::record!(
                    @read $source, $get, $field, [$($column)?], [$(|$row| $read)?]
                ),
            )*
        })
    };
    (@read $source:ident, $get:path, $field:ident, [], []) => {
        $get($source, stringify!($field))?
    };
    (@read $source:ident, $get:path, $field:ident, [$column:literal], []) => {
        $get($source, $column)?
    };
    (@read $source:ident, $get:path, $field:ident, [], [|$row:ident| $read:expr]) => {{
        let $row = $source;
        $read
    }};
}

pub(crate) use record;
