package dev.torchjob.operator.reconciler;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.client.informers.cache.BasicItemStore;
import io.fabric8.kubernetes.client.informers.cache.Cache;

/**
 * The informer cache of a job's pods and Services, kept without {@code metadata.managedFields}:
 * the operator never reads them, and on a real API server they are a large part of every pod
 * (each writer — operator, scheduler, kubelet — adds an entry listing the fields it owns).
 */
final class CacheWithoutManagedFields<R extends HasMetadata> extends BasicItemStore<R> {
    CacheWithoutManagedFields() {
        super(Cache::metaNamespaceKeyFunc);
    }

    @Override
    public R put(String key, R object) {
        object.getMetadata().setManagedFields(null);
        return super.put(key, object);
    }
}
