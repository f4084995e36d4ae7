//! Leases: the slot an admitted request holds in its concurrency limits until it ends.
//!
//! A decision admitted by Redis under a rule or a policy with in-flight limits carries a
//! [`Lease`]: its id (the member it holds in every limit's sorted set) and what it takes to give
//! it back. [`Lease::release`] frees the slot in every such limit at once, with one call of
//! `lua/lease.lua`; [`Lease::renew`] gives it its `lease_ms` again from now, for a long request.
//! A lease dropped unreleased is released in the background (on the runtime it was dropped in);
//! a process that dies releases nothing, and its leases free themselves `lease_ms` after they
//! were last taken or renewed.
//!
//! Clones share one lease: it is released once, when the last clone is dropped (or when any
//! of them releases it). A lease read back from JSON is an id alone: sent back to the process
//! that decided (serve's `/api/release`), it is released there.

use crate::error::RedisFailure;
pub use crate::lease_calls::lease_evalsha;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Who can give a lease back: the limiter that took it (`crate::lease_calls`), through one
/// call of `lua/lease.lua`. Returns how many of the sets held the lease live.
pub trait LeaseHolder: Send + Sync {
    fn lease_call<'a>(
        &'a self,
        op: LeaseOp,
        id: &'a str,
        sets: &'a [(String, u64)],
    ) -> Pin<Box<dyn Future<Output = Result<u64, RedisFailure>> + Send + 'a>>;
}

/// The slot one admitted request holds in every concurrency limit of its rule or policy.
#[derive(Clone)]
pub struct Lease {
    inner: Arc<Held>,
}

/// What a lease needs to be given back: its sets and their lives, and who took it.
struct Held {
    id: String,
    /// The concurrency limits' sorted sets, with each one's `lease_ms` (for a renewal).
    sets: Vec<(String, u64)>,
    /// The limiter that took it; `None` for an id read back from JSON.
    owner: Option<Arc<dyn LeaseHolder>>,
    /// Set once released (by a call, or on drop): a lease is given back once.
    released: AtomicBool,
    /// Released in the background when dropped unreleased: a lease its own decision took.
    /// One named by id for another process (`Limiter::lease_of`) is not: that process holds it.
    on_drop: AtomicBool,
}

/// Release or renew, `lua/lease.lua`'s ARGV[1].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseOp {
    Release,
    Renew,
}

impl LeaseOp {
    pub fn as_str(self) -> &'static str {
        match self {
            LeaseOp::Release => "release",
            LeaseOp::Renew => "renew",
        }
    }
}

impl Lease {
    /// A lease held in `sets` (each with its `lease_ms`) under `id`, taken by `owner`;
    /// `on_drop`: released in the background when dropped unreleased (a lease its own decision
    /// took), or not (one named by id for another process, which holds it).
    pub(crate) fn held(
        owner: Arc<dyn LeaseHolder>,
        id: String,
        sets: Vec<(String, u64)>,
        on_drop: bool,
    ) -> Lease {
        Lease {
            inner: Arc::new(Held {
                id,
                sets,
                owner: Some(owner),
                released: AtomicBool::new(false),
                on_drop: AtomicBool::new(on_drop),
            }),
        }
    }

    /// A lease known by its id alone (read back from a decision's JSON): it says which lease,
    /// and cannot give itself back; dropping it does nothing.
    pub fn from_id(id: impl Into<String>) -> Lease {
        Lease {
            inner: Arc::new(Held {
                id: id.into(),
                sets: Vec::new(),
                owner: None,
                released: AtomicBool::new(true),
                on_drop: AtomicBool::new(false),
            }),
        }
    }

    /// The lease's id: the member it holds in every limit's set.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The concurrency limits' keys it is held in.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.inner.sets.iter().map(|(key, _)| key.as_str())
    }

    /// Keeps the lease past this value: dropping it no longer releases it. For a lease handed
    /// to a caller elsewhere by its id (serve's reply, `ratelockr check`), which releases it by
    /// that id, or lets it expire after its `lease_ms`.
    pub fn keep(&self) {
        self.inner.on_drop.store(false, Ordering::Release);
    }

    /// Whether it has been released (or is an id alone).
    pub fn is_released(&self) -> bool {
        self.inner.released.load(Ordering::Acquire)
    }

    /// Frees the slot in every concurrency limit at once. True when it was live somewhere and
    /// is now freed; false when it had been released before or had expired (it frees nothing
    /// then). A Redis failure is returned (counted and logged like a decision's) and the lease
    /// stays held until it expires: the safe side.
    pub async fn release(&self) -> Result<bool, RedisFailure> {
        if self.inner.released.swap(true, Ordering::AcqRel) {
            return Ok(false);
        }
        let Some(owner) = &self.inner.owner else {
            return Ok(false);
        };
        let freed = owner
            .lease_call(LeaseOp::Release, &self.inner.id, &self.inner.sets)
            .await?;
        Ok(freed > 0)
    }

    /// Gives the lease its `lease_ms` again from now, in every limit where it is still live.
    /// True when it was live in every one; false when it had expired or been released (it is
    /// not taken again: the caller no longer holds a slot).
    pub async fn renew(&self) -> Result<bool, RedisFailure> {
        let Some(owner) = self.inner.owner.as_ref().filter(|_| !self.is_released()) else {
            return Ok(false);
        };
        let live = owner
            .lease_call(LeaseOp::Renew, &self.inner.id, &self.inner.sets)
            .await?;
        Ok(live == self.inner.sets.len() as u64)
    }
}

impl Drop for Held {
    /// An unreleased lease is released in the background, on the runtime it is dropped in (a
    /// response body ended, a handler returned early, a client disconnected). Outside a
    /// runtime it cannot be: it expires after its `lease_ms`.
    fn drop(&mut self) {
        if *self.released.get_mut() || !*self.on_drop.get_mut() {
            return;
        }
        let (Some(owner), Ok(runtime)) = (self.owner.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let (id, sets) = (std::mem::take(&mut self.id), std::mem::take(&mut self.sets));
        runtime.spawn(async move {
            // A failure is counted and logged by the call; the lease expires by itself.
            let _ = owner.lease_call(LeaseOp::Release, &id, &sets).await;
        });
    }
}

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lease")
            .field("id", &self.inner.id)
            .field("keys", &self.inner.sets)
            .field("released", &self.is_released())
            .finish()
    }
}

/// Two leases are the same lease when their ids are.
impl PartialEq for Lease {
    fn eq(&self, other: &Self) -> bool {
        self.inner.id == other.inner.id
    }
}

impl Eq for Lease {}
