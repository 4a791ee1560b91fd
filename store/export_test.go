package store

// ScheduleBucket and ScheduleIndexBucket are the bbolt buckets of the
// schedules' records and of their index by conversation, and
// ScheduleIndexKey is the entry of the schedule id in key's: for the
// conformance test, which writes them raw.
var ScheduleBucket, ScheduleIndexBucket = bucketSchedules, bucketScheduleKeys

func ScheduleIndexKey(key Key, id string) []byte { return scheduleKey(key, id) }
