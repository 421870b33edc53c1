/// A value kept in a list strictly ascending by `EntryKey`: the index's entries, the history
/// section's records.
protocol SortedByEntryKey {
    /// The sort key: owner bytes, then name bytes.
    var key: EntryKey { get }
}

extension SealedEntry: SortedByEntryKey {}
extension HistoryRecord: SortedByEntryKey {}

extension Array where Element: SortedByEntryKey {
    /// Binary search for `key`.
    /// - Returns: its position, or nil when no element has that key.
    func position(of key: EntryKey) -> Int? {
        let position = insertionPosition(of: key)
        return position < count && self[position].key == key ? position : nil
    }

    /// Binary search for where `key` is, or would be inserted to keep the order.
    func insertionPosition(of key: EntryKey) -> Int {
        var low = 0, high = count
        while low < high {
            let mid = (low + high) / 2
            if self[mid].key < key { low = mid + 1 } else { high = mid }
        }
        return low
    }
}
