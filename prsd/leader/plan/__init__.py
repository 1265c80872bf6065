"""Planning a job's input into mini-batches: the owner's planner process, its stream, the splitters and the packing of mini-batches into tasks."""
