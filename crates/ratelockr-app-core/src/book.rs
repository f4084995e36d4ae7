//! A book of named things the user edits (rules, policies): unique by name, kept in the
//! order they were created, renamed only onto a free name.

use crate::error::{AppError, ErrorCode};

/// What a book holds: something with a name, and how the book's errors call it.
pub trait Named: Clone {
    /// "rule", "policy": the word in messages.
    const WHAT: &'static str;
    const EXISTS: ErrorCode;
    const NOT_FOUND: ErrorCode;
    fn name(&self) -> &str;
}

/// Named items, unique by name, in the order they were created.
#[derive(Debug, Clone)]
pub struct Book<T> {
    items: Vec<T>,
}

impl<T> Default for Book<T> {
    fn default() -> Self {
        Book { items: Vec::new() }
    }
}

impl<T: Named> Book<T> {
    /// A book of `items`; a second item of a name already taken is dropped.
    pub fn new(items: Vec<T>) -> Self {
        let mut book = Book::default();
        for item in items {
            if book.position(item.name()).is_none() {
                book.items.push(item);
            }
        }
        book
    }

    pub fn items(&self) -> &[T] {
        &self.items
    }

    pub fn get(&self, name: &str) -> Option<&T> {
        self.items.iter().find(|r| r.name() == name)
    }

    fn position(&self, name: &str) -> Option<usize> {
        self.items.iter().position(|r| r.name() == name)
    }

    /// Creates an item (`original` None) or replaces the item called `original`, which may be
    /// renamed as long as the new name is free.
    pub fn upsert(&mut self, original: Option<&str>, item: T) -> Result<(), AppError> {
        let clash = self.position(item.name());
        match original.map(|name| (name, self.position(name))) {
            None => {
                if clash.is_some() {
                    return Err(exists::<T>(item.name()));
                }
                self.items.push(item);
            }
            Some((name, None)) => return Err(not_found::<T>(name)),
            Some((_, Some(at))) => {
                if clash.is_some_and(|c| c != at) {
                    return Err(exists::<T>(item.name()));
                }
                self.items[at] = item;
            }
        }
        Ok(())
    }

    /// Puts `item` in, replacing the item of its name if there is one; true when it replaced.
    pub fn put(&mut self, item: T) -> bool {
        match self.position(item.name()) {
            Some(at) => {
                self.items[at] = item;
                true
            }
            None => {
                self.items.push(item);
                false
            }
        }
    }

    pub fn remove(&mut self, name: &str) -> Result<T, AppError> {
        let at = self.position(name).ok_or_else(|| not_found::<T>(name))?;
        Ok(self.items.remove(at))
    }
}

fn exists<T: Named>(name: &str) -> AppError {
    AppError::new(
        T::EXISTS,
        format!("a {} named {name:?} already exists", T::WHAT),
    )
    .with_field("name")
}

fn not_found<T: Named>(name: &str) -> AppError {
    AppError::new(T::NOT_FOUND, format!("no {} named {name:?}", T::WHAT))
}
