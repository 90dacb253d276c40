//! The children's caches as reconciles and the entry loop read them: per managed type, one
//! scope per namespace watched (or one for all).

use std::sync::Arc;

use kube::core::DynamicObject;

use crate::cache::{Cache, Holder, Readiness, cache_key};
use crate::index::ChildRef;
use crate::reconcile::{LiveChildren, Presence};

/// The caches of one scope of a managed type's watches (a namespace, or everywhere).
pub(crate) struct ScopeCaches {
    pub scope: Option<String>,
    /// ork's children there (its label selector).
    pub objects: Cache,
    /// Every other object of the type there, by who holds it (a metadata-only watch of the
    /// complement of ork's label selector); `None` in `ork simulate`, which asks its in-memory
    /// cluster instead.
    pub holders: Option<Cache<Holder>>,
}

impl ScopeCaches {
    /// Whether each cache of the scope holds its first list.
    pub fn readiness(&self) -> impl Iterator<Item = Readiness> {
        std::iter::once(self.objects.readiness()).chain(self.holders.iter().map(Cache::readiness))
    }
}

/// The children's caches, per managed type and scope, as reconciles read them.
pub(crate) struct LiveView {
    pub scopes: Vec<Vec<ScopeCaches>>,
}

impl LiveView {
    /// The caches of the scope `child` lies in.
    fn scope_of(&self, child: &ChildRef) -> Option<&ScopeCaches> {
        self.scopes
            .get(child.type_index)?
            .iter()
            .find(|s| s.scope.is_none() || s.scope.as_deref() == child.namespace.as_deref())
    }

    /// The namespace of scope `scope` of type `type_index` (`None`: everywhere).
    pub fn scope_name(&self, type_index: usize, scope: usize) -> Option<String> {
        self.scopes.get(type_index)?.get(scope)?.scope.clone()
    }

    pub fn object(&self, child: &ChildRef) -> Option<Arc<DynamicObject>> {
        let key = cache_key(child.namespace.as_deref(), &child.name);
        self.scope_of(child)?.objects.get(&key)
    }

    /// Whether each cache holds its first list.
    pub fn readiness(&self) -> impl Iterator<Item = Readiness> {
        self.scopes
            .iter()
            .flatten()
            .flat_map(ScopeCaches::readiness)
    }
}

impl LiveChildren for LiveView {
    fn get(&self, child: &ChildRef) -> Option<Arc<DynamicObject>> {
        self.object(child)
    }

    fn presence(&self, child: &ChildRef) -> Presence {
        let Some(scope) = self.scope_of(child) else {
            return Presence::Unknown;
        };
        let Some(holders) = &scope.holders else {
            return Presence::Unknown;
        };
        // The two watches split the objects by ork's label: look in both.
        let key = cache_key(child.namespace.as_deref(), &child.name);
        if let Some(object) = scope.objects.get(&key) {
            return Presence::Held(Holder::of(&object.metadata));
        }
        match holders.lookup(&key) {
            Some(holder) => Presence::Held(holder),
            None => Presence::Absent,
        }
    }
}
