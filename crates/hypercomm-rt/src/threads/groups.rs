//! Sub-communicators of the threads backend: every communicator (the run's, and each
//! one split or duplicated from it) has a [`Shared`] of its own, with its own mailboxes,
//! so its messages never meet another communicator's: isolation is structural, not a
//! tag to compare.
//!
//! The ranks of a new group agree on its `Shared` without exchanging a message: each
//! looks it up in the run's [`Registry`] by the key (parent communicator, number of the
//! split on the parent, color), which every member computes alike since every rank of a
//! communicator makes the same calls in the same order; the first to arrive creates it
//! (a split's colors and keys are exchanged before, by an all-gather on the parent).
//! A group's `Shared` lives as long as one of its members' endpoints does (an `Arc`).
//!
//! Failures reach every group: a rank whose closure fails (or returns) is marked failed
//! (or gone) in every live group it belongs to, and an endpoint that is dropped marks its
//! rank gone in its group, so that a wait on a rank of a sub-communicator ends with
//! [`crate::Error::PeerFailed`] as on the run's communicator.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use hypercomm::schedule::Rank;

use super::rendezvous::Shared;
use super::{block, fibers, Config, Threads};
use crate::error::{Error, Result};
use crate::immediate::Detach;
use crate::split::Split;
use crate::Transport;

/// One communicator's state: its mailboxes, and its members as ranks of the run.
pub(crate) struct Group {
    /// The communicator's identity, unique within the run (0: the run's own).
    pub(crate) id: u64,
    pub(crate) shared: Shared,
    /// Member i's rank in the run.
    pub(crate) world: Box<[Rank]>,
    /// Members that have joined so far.
    joined: AtomicUsize,
}

/// What identifies a group before it exists: (parent's id, the split's number on the
/// parent, color).
type Key = (u64, u32, u32);

/// The groups of one run ([`super::run_with`] keeps one for its duration).
pub(crate) struct Registry {
    config: Config,
    /// The number of threads running the ranks as fibers, if they are.
    fiber_threads: Option<usize>,
    /// The CPUs the ranks are placed on and the CPUs the process may use, as the
    /// launching thread counts them (a rank's thread may be bound to one).
    cpus: (usize, usize),
    /// The CPUs the launching thread may run on, for the threads a bound rank starts
    /// (empty when the ranks are not bound, or the set is unknown).
    allowed: Vec<usize>,
    next_id: AtomicU64,
    /// Groups some member has created and not every member joined yet.
    pending: Mutex<HashMap<Key, Arc<Group>>>,
    /// Every group created, for failure notices, and the run's ranks that failed
    /// (`true`) or left so far, for the groups created after.
    live: Mutex<(Vec<Weak<Group>>, Vec<(Rank, bool)>)>,
}

impl Registry {
    /// The registry of a run of `config`; `allowed`: the launching thread's CPUs when
    /// the ranks are bound, else empty.
    pub(crate) fn new(config: &Config, fiber_threads: Option<usize>, allowed: Vec<usize>) -> Self {
        Registry {
            config: config.clone(),
            fiber_threads,
            cpus: super::cpus(),
            allowed,
            next_id: AtomicU64::new(1),
            pending: Mutex::new(HashMap::new()),
            live: Mutex::new((Vec::new(), Vec::new())),
        }
    }

    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    /// The CPUs the run places its ranks on and those the process may use, as its
    /// launching thread counted them.
    pub(crate) fn cpus(&self) -> (usize, usize) {
        self.cpus
    }

    /// Whether the run binds its ranks to CPUs: [`Config::pin`], and the launching
    /// thread's CPUs were known.
    pub(crate) fn bound(&self) -> bool {
        !self.allowed.is_empty()
    }

    /// The group of `key`, whose members are the run's ranks `world` in order, creating
    /// it if this member is the first to ask. `detached`: its members are progress
    /// threads (never fibers), not the ranks' own threads.
    pub(crate) fn join(&self, key: Key, world: &[Rank], detached: bool) -> Arc<Group> {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let group = pending
            .entry(key)
            .or_insert_with(|| {
                let mut shared = Shared::new(world.len() as u32, self.config.eager);
                if let (Some(n), false) = (self.fiber_threads, detached) {
                    let k = self.config.ranks;
                    shared.share_threads(|r| block(world[r as usize], n, k));
                    // A fiber waiting here pauses on the run's `Shared`, whose parking
                    // does not mark it parked in this one: wake it at every message.
                    shared.wake_always();
                }
                let group = Arc::new(Group {
                    id: self.next_id.fetch_add(1, Ordering::Relaxed),
                    shared,
                    world: world.into(),
                    joined: AtomicUsize::new(0),
                });
                let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
                let (groups, departed) = &mut *live;
                groups.retain(|g| g.strong_count() > 0);
                groups.push(Arc::downgrade(&group));
                departed
                    .iter()
                    .for_each(|&(r, failed)| group.depart(r, failed));
                group
            })
            .clone();
        if group.joined.fetch_add(1, Ordering::Relaxed) + 1 == world.len() {
            pending.remove(&key);
        }
        group
    }

    /// The run's rank `rank` failed (`failed`) or left: so it did in every group.
    pub(crate) fn leave(&self, rank: Rank, failed: bool) {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        let (groups, departed) = &mut *live;
        departed.push((rank, failed));
        for group in groups.iter().filter_map(Weak::upgrade) {
            group.depart(rank, failed);
        }
    }
}

impl Group {
    /// The run's rank `rank` failed (`failed`) or left: if it is a member, so it did here.
    fn depart(&self, rank: Rank, failed: bool) {
        if let Some(i) = self.world.iter().position(|&w| w == rank) {
            match failed {
                true => self.shared.fail(i as Rank),
                false => self.shared.leave(i as Rank),
            }
        }
    }
}

/// A duplicate of a communicator, made on a rank's thread and entered on another
/// ([`crate::immediate::Detach`]): the group's key and members, without the group.
pub struct Ticket<'s> {
    registry: &'s Registry,
    key: Key,
    world: Box<[Rank]>,
    rank: Rank,
}

impl<'s> Threads<'s> {
    /// The run's rank of this communicator's rank `r`.
    fn world_rank(&self, r: Rank) -> Rank {
        self.group.as_ref().map_or(r, |g| g.world[r as usize])
    }

    /// The key of this communicator's next split or duplicate, with `color`.
    fn next_key(&mut self, color: u32) -> Result<(&'s Registry, Key)> {
        let registry = self.registry.ok_or_else(|| Error::Unsupported {
            call: "split",
            reason: "this endpoint was made outside a run".into(),
        })?;
        let id = self.group.as_ref().map_or(0, |g| g.id);
        let seq = self.splits;
        self.splits += 1;
        Ok((registry, (id, seq, color)))
    }

    /// Enter the group of `key` whose members are the run's ranks `world`, as member
    /// `rank`, on the calling thread.
    fn enter(
        registry: &'s Registry,
        key: Key,
        world: &[Rank],
        rank: Rank,
        fiber: Option<fibers::Fiber<'s>>,
    ) -> Threads<'s> {
        let group = registry.join(key, world, key.2 == DETACHED);
        // SAFETY: `group`, kept in the endpoint, owns the `Shared` for as long as the
        // endpoint lives; the `'s` it is given is never used beyond that: every borrow
        // of it (claims, copies) is taken and ended within one call of the endpoint.
        let shared: &'s Shared = unsafe { &*std::ptr::from_ref(&group.shared) };
        shared.register(rank);
        let config = registry.config();
        let mut t = Threads::new(shared, rank, config, fiber).in_run(registry);
        t.group = Some(group);
        t
    }
}

/// The color of duplicates made for progress threads ([`Ticket`]): outside the colors
/// a split accepts (`i32::MAX` at most, as MPI's).
const DETACHED: u32 = u32::MAX;

impl<'s> Split for Threads<'s> {
    fn split(&mut self, color: Option<u32>, _key: i32, members: &[Rank]) -> Result<Option<Self>> {
        let (registry, key) = self.next_key(color.unwrap_or(0))?;
        let Some(_) = color else { return Ok(None) };
        let world: Vec<Rank> = members.iter().map(|&m| self.world_rank(m)).collect();
        let me = members.iter().position(|&m| m == self.rank);
        let me = me.expect("a rank with a color is among its group's members");
        Ok(Some(Threads::enter(
            registry, key, &world, me as Rank, self.fiber,
        )))
    }
}

impl<'s> Detach for Threads<'s> {
    type Detached = Ticket<'s>;

    fn detach(&mut self) -> Result<Ticket<'s>> {
        let (registry, key) = self.next_key(DETACHED)?;
        let world = (0..self.size()).map(|r| self.world_rank(r)).collect();
        Ok(Ticket {
            registry,
            key,
            world,
            rank: self.rank,
        })
    }

    fn attach(ticket: Ticket<'s>) -> Result<Self> {
        let Ticket {
            registry,
            key,
            world,
            rank,
        } = ticket;
        // A progress thread started by a bound rank has the rank's one CPU: give it
        // the launch's, so that it runs beside the rank, not in turns with it.
        super::affinity::bind_any(&registry.allowed);
        Ok(Threads::enter(registry, key, &world, rank, None))
    }

    fn pause<'a>(&self) -> Option<Box<dyn Fn() + 'a>>
    where
        Self: 'a,
    {
        let fiber = self.fiber?;
        Some(Box::new(move || fiber.pause(fibers::Pause::Waiting)))
    }
}

impl Drop for Threads<'_> {
    /// A sub-communicator's endpoint leaves its group: its peers' waits on it end.
    fn drop(&mut self) {
        if self.group.is_some() {
            self.cancel_all();
            self.shared.leave(self.rank);
        }
    }
}
