#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Keeps the descriptors vault inherited (beyond 0, 1, 2) from reaching programs it starts
/// that outlive it: xclip stays in the background holding the selection, the clipboard
/// clearer sleeps. A pipe of whoever started vault, held open by them, would never see end of file.
enum InheritedDescriptors {
    /// Marks every open descriptor from 3 up close-on-exec (listed from /proc/self/fd).
    static func closeOnExec() {
        guard let directory = opendir("/proc/self/fd") else { return }
        var descriptors: [Int32] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if let descriptor = Int32(name), descriptor >= 3 { descriptors.append(descriptor) }
        }
        closedir(directory)
        for descriptor in descriptors {
            let flags = fcntl(descriptor, F_GETFD)
            if flags >= 0 { _ = fcntl(descriptor, F_SETFD, flags | FD_CLOEXEC) }
        }
    }
}
