package io.sluice.storage;

import jnr.ffi.Platform;
import net.openhft.posix.ClockId;
import net.openhft.posix.MAdviseFlag;
import net.openhft.posix.MMapFlag;
import net.openhft.posix.MMapProt;
import net.openhft.posix.MSyncFlag;
import net.openhft.posix.MclFlag;
import net.openhft.posix.OpenFlag;
import net.openhft.posix.PosixAPI;
import net.openhft.posix.WhenceFlag;
import net.openhft.posix.internal.PosixAPIHolder;
import net.openhft.posix.internal.jnr.JNRPosixAPI;
import net.openhft.posix.internal.jnr.WinJNRPosixAPI;
import net.openhft.posix.internal.noop.NoOpPosixAPI;

/**
 * Chronicle's POSIX calls ({@link PosixAPI}: msync, madvise, ...), with the native binding loaded at the first call
 * instead of when Chronicle starts. Chronicle Core's {@code Jvm} class asks for {@link PosixAPI#posix()} while it
 * initialises, which loads JNR, generates its call stubs with ASM and extracts jffi's native library: the largest part
 * of Chronicle's set-up, which the store's open waits for (docs/performance.md, "Restart after kill -9"), for calls
 * the broker makes only after it is serving (the store's periodic madvise) or that need no binding on Linux
 * (Chronicle's msync with {@code MS_ASYNC} when it releases a mapping, see {@link #msync(long, long, int)}).
 * {@link #install()} puts this in Chronicle's holder before {@code Jvm} initialises, so that {@code posix()} returns
 * it; {@link #loadInBackground} then loads the binding off the start's path, a few seconds after the broker is
 * listening, and what can wait for it checks {@link #ready()} instead of meeting the load on a serving thread (the
 * flusher's dropping of written pages, {@code ResidentPages}).
 *
 * <p>Every method delegates to the binding {@code PosixAPIHolder.loadPosixApi} would have made (JNR, and on failure
 * Chronicle's no-op API, which names the reason), loaded once, under this object's lock, by whichever thread calls
 * first. Once loaded, the binding replaces this in the holder, so that later {@code posix()} calls reach it directly.
 * Thread-safe.
 */
public final class DeferredPosix implements PosixAPI {
    private static final DeferredPosix INSTANCE = new DeferredPosix();

    private volatile PosixAPI loaded;

    DeferredPosix() {
    }

    /**
     * Makes {@link PosixAPI#posix()} return the deferred API, unless a binding is there already. Call before
     * anything initialises Chronicle Core's {@code Jvm} class; later it changes nothing.
     */
    public static synchronized void install() {
        if (PosixAPIHolder.POSIX_API == null) {
            PosixAPIHolder.POSIX_API = INSTANCE;
        }
    }

    /**
     * Loads the binding on a daemon thread of its own, {@code sluice-posix-load}, {@code delayMillis} after this call,
     * unless it is loaded by then: a few hundred milliseconds of CPU that would otherwise share the cores with the
     * first publishes after a start.
     */
    public static void loadInBackground(long delayMillis) {
        if (ready()) {
            return;
        }
        Thread thread = new Thread(() -> {
            try {
                Thread.sleep(delayMillis);
            } catch (InterruptedException e) {
                return;
            }
            INSTANCE.api();
        }, "sluice-posix-load");
        thread.setDaemon(true);
        thread.start();
    }

    /**
     * Whether a call to {@link PosixAPI#posix()} is answered without loading the binding first: true unless the
     * deferred API is installed and not loaded yet. Work that can wait, like dropping pages from memory, waits for it.
     */
    public static boolean ready() {
        return PosixAPIHolder.POSIX_API != INSTANCE || INSTANCE.loaded != null;
    }

    /** Loads the binding now, unless it is loaded already (the class archive's training, so that it archives its classes). */
    public static void load() {
        INSTANCE.api();
    }

    /** Whether the binding has been loaded. */
    boolean isLoaded() {
        return loaded != null;
    }

    /** The binding, loaded at the first call: as {@code PosixAPIHolder.loadPosixApi} makes it. */
    private PosixAPI api() {
        PosixAPI api = loaded;
        if (api != null) {
            return api;
        }
        synchronized (this) {
            if (loaded == null) {
                PosixAPI binding;
                try {
                    binding = Platform.getNativePlatform().isUnix() ? new JNRPosixAPI() : new WinJNRPosixAPI();
                } catch (Throwable unusable) {
                    binding = new NoOpPosixAPI(unusable.toString());
                }
                loaded = binding;
                synchronized (DeferredPosix.class) {
                    if (PosixAPIHolder.POSIX_API == this) {
                        PosixAPIHolder.POSIX_API = binding;
                    }
                }
            }
            return loaded;
        }
    }

    @Override
    public int close(int fd) {
        return api().close(fd);
    }

    @Override
    public int fallocate(int fd, int mode, long offset, long length) {
        return api().fallocate(fd, mode, offset, length);
    }

    @Override
    public int ftruncate(int fd, long offset) {
        return api().ftruncate(fd, offset);
    }

    @Override
    public long lseek(int fd, long offset, WhenceFlag whence) {
        return api().lseek(fd, offset, whence);
    }

    @Override
    public long lseek(int fd, long offset, int whence) {
        return api().lseek(fd, offset, whence);
    }

    @Override
    public int lockf(int fd, int command, long length) {
        return api().lockf(fd, command, length);
    }

    @Override
    public int madvise(long address, long length, MAdviseFlag advice) {
        return api().madvise(address, length, advice);
    }

    @Override
    public int madvise(long address, long length, int advice) {
        return api().madvise(address, length, advice);
    }

    @Override
    public long mmap(long address, long length, MMapProt protection, MMapFlag flags, int fd, long offset) {
        return api().mmap(address, length, protection, flags, fd, offset);
    }

    @Override
    public long mmap(long address, long length, int protection, int flags, int fd, long offset) {
        return api().mmap(address, length, protection, flags, fd, offset);
    }

    @Override
    public boolean mlock(long address, long length) {
        return api().mlock(address, length);
    }

    @Override
    public boolean mlock2(long address, long length, boolean onFault) {
        return api().mlock2(address, length, onFault);
    }

    @Override
    public void mlockall(MclFlag flags) {
        api().mlockall(flags);
    }

    @Override
    public void mlockall(int flags) {
        api().mlockall(flags);
    }

    @Override
    public int msync(long address, long length, MSyncFlag flags) {
        if (flags == MSyncFlag.MS_ASYNC && loaded == null) {
            return 0; // as msync(MS_ASYNC) answers: see below
        }
        return api().msync(address, length, flags);
    }

    /**
     * Chronicle msyncs a mapping it releases (at a roll or close, and the store's recovery opens and closes metadata
     * files) with {@code MS_ASYNC}, its default sync mode; on Linux that call does nothing (msync(2): "since Linux
     * 2.6.19, MS_ASYNC is in fact a no-op"), so before the binding is loaded it is answered here, as the kernel would,
     * instead of loading the binding for it during the start. Sluice makes data durable with fsync of its own
     * (docs/storage.md), never through Chronicle's msync; an {@code MS_SYNC} loads the binding and is carried out.
     */
    @Override
    public int msync(long address, long length, int flags) {
        if (flags == MSyncFlag.MS_ASYNC.value() && loaded == null) {
            return 0;
        }
        return api().msync(address, length, flags);
    }

    @Override
    public int munmap(long address, long length) {
        return api().munmap(address, length);
    }

    @Override
    public int open(CharSequence path, OpenFlag flags, int mode) {
        return api().open(path, flags, mode);
    }

    @Override
    public int open(CharSequence path, int flags, int mode) {
        return api().open(path, flags, mode);
    }

    @Override
    public long read(int fd, long address, long length) {
        return api().read(fd, address, length);
    }

    @Override
    public long write(int fd, long address, long length) {
        return api().write(fd, address, length);
    }

    @Override
    public long du(String path) throws java.io.IOException {
        return api().du(path);
    }

    @Override
    public int gettimeofday(long timeval) {
        return api().gettimeofday(timeval);
    }

    @Override
    public int sched_setaffinity(int pid, int maskBytes, long mask) {
        return api().sched_setaffinity(pid, maskBytes, mask);
    }

    @Override
    public int sched_getaffinity(int pid, int maskBytes, long mask) {
        return api().sched_getaffinity(pid, maskBytes, mask);
    }

    @Override
    public String sched_getaffinity_summary(int pid) {
        return api().sched_getaffinity_summary(pid);
    }

    @Override
    public int lastError() {
        return api().lastError();
    }

    @Override
    public int sched_setaffinity_as(int pid, int cpu) {
        return api().sched_setaffinity_as(pid, cpu);
    }

    @Override
    public int sched_setaffinity_range(int pid, int fromCpu, int toCpu) {
        return api().sched_setaffinity_range(pid, fromCpu, toCpu);
    }

    @Override
    public long gettimeofday() {
        return api().gettimeofday();
    }

    @Override
    public long clock_gettime() {
        return api().clock_gettime();
    }

    @Override
    public long clock_gettime(ClockId clockId) {
        return api().clock_gettime(clockId);
    }

    @Override
    public long clock_gettime(int clockId) {
        return api().clock_gettime(clockId);
    }

    @Override
    public long malloc(long size) {
        return api().malloc(size);
    }

    @Override
    public void free(long address) {
        api().free(address);
    }

    @Override
    public int get_nprocs() {
        return api().get_nprocs();
    }

    @Override
    public int get_nprocs_conf() {
        return api().get_nprocs_conf();
    }

    @Override
    public int getpid() {
        return api().getpid();
    }

    @Override
    public int gettid() {
        return api().gettid();
    }

    @Override
    public String strerror(int errno) {
        return api().strerror(errno);
    }

    @Override
    public String lastErrorStr() {
        return api().lastErrorStr();
    }
}
