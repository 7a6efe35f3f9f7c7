//! The service's ids as SQLite values: bound as text, and read back as ids without a check,
//! since only the service writes them.

use rusqlite::types::{FromSql, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

use crate::ids::{DigestId, InboxId, InstanceId};

/// Binds and reads one id type as a text column.
macro_rules! text_column {
    ($($id:ident),*) => {$(
        impl ToSql for $id {
            fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                Ok(ToSqlOutput::Borrowed(ValueRef::Text(self.as_str().as_bytes())))
            }
        }

        impl FromSql for $id {
            fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
                String::column_result(value).map(Self::stored)
            }
        }
    )*};
}

text_column!(InstanceId, DigestId, InboxId);
